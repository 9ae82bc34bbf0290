import { randomUUID } from 'node:crypto'
import { cachedRowStatement, cachedStatementPerShape } from '../db/statement-cache.js'
import type { QueryCreator, Selectable } from 'kysely'
import { AppError } from '../../schemas/problems.js'
import { orNotFound } from './errors.js'
import type { Chapter, ChapterCreate, Course, Lesson, LessonCreate, PositionedListQuery } from '../../schemas/courses.js'
import type { Db } from '../db/dialect.js'
import { lockForUpdate } from '../db/row-lock.js'
import type { ChapterTable, Database, LessonTable, PostTable } from '../db/schema.js'
import { changeRow, rowVersion, sameVersion } from '../db/row-change.js'
import { formatDateTime } from '../db/date-time-format.js'
import { writeTimeIso } from '../db/clock.js'
import type { SelectQueryBuilder } from '../db/kysely.js'
import { compiledList, type Page } from '../db/paging.js'
import { parseSort } from './list.js'
import { getPost, isVisible, visibleTo } from './posts.js'
import { bodyOf, type Change } from './merge-patch.js'

/**
 * The route's owner and If-Match checks, run against the rows as they are: as a change writes
 * them (changeRow), or inside a delete's transaction with the parent and the row locked, so two
 * writers holding the same ETag cannot both pass.
 */
export type Guard<T> = (current: T) => void

/** What the owner rule of a chapter or a lesson asks of its course: whose it is. */
export interface CourseOwner { id: string, creator: { id: string } }

/**
 * Courses are posts of type COURSE and follow the posts' visibility rule (a draft is seen by its
 * creator only); chapters and lessons keep an explicit 1-based position order.
 */

const courseNotFound = (id: string) => new AppError('CourseNotFound', `no course with id ${id}`)
const chapterNotFound = (id: string) => new AppError('ChapterNotFound', `no chapter with id ${id}`)
const lessonNotFound = (id: string) => new AppError('LessonNotFound', `no lesson with id ${id}`)

function toChapter (row: Selectable<ChapterTable>): Chapter {
  return {
    id: row.id,
    course_id: row.course_id,
    title: row.title,
    position: row.position,
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

function toLesson (row: Selectable<LessonTable>): Lesson {
  return {
    id: row.id,
    chapter_id: row.chapter_id,
    title: row.title,
    body: row.body,
    position: row.position,
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

/** The course as the viewer may see it: missing, hidden and ARTICLE posts are all 404 CourseNotFound. */
export async function getCourse (db: Db, courseId: string, viewerId: string | undefined): Promise<Course> {
  const post = await getPost(db, courseId, viewerId).catch((err: unknown) => {
    throw err instanceof AppError && err.code === 'PostNotFound' ? courseNotFound(courseId) : err
  })
  if (post.type !== 'COURSE') throw courseNotFound(courseId)
  const { n } = await db
    .selectFrom('chapter')
    .select(eb => eb.fn.countAll<number | string>().as('n'))
    .where('course_id', '=', courseId)
    .executeTakeFirstOrThrow()
  return { ...post, chapters_count: Number(n) }
}

/**
 * isVisible in SQL, for the reads of what hangs off a course (its classes): a course is seen by
 * its creator, and by everyone once its published_at has come (`now`, ISO text).
 */
export function courseVisibleTo<O> (
  posts: SelectQueryBuilder<Database, 'post', O>,
  v: { viewer_id: string; now: string }
): SelectQueryBuilder<Database, 'post', O> {
  return visibleTo(posts, v.viewer_id, v.now)
}

/** A post as the course rule of a class judges it. */
export type CourseHead = Pick<Selectable<PostTable>, 'creator_id' | 'type' | 'published_at'>

/**
 * For a class tied to a course: it must be a COURSE post (else 422 on the body field) of the
 * caller (else 403 UserNotOwner). Drafts count: a class may be planned before the course is out.
 * Another creator's draft or scheduled course gets the 422 of a missing one, so it does not leak.
 */
export async function assertOwnCourse (db: Db, courseId: string, userId: string): Promise<void> {
  checkOwnCourse(await courseHead(db, courseId), courseId, userId)
}

/** assertOwnCourse's rule on the post as read (undefined: there is none). */
export function checkOwnCourse (post: CourseHead | undefined, courseId: string, userId: string): void {
  if (!post || post.type !== 'COURSE' || !isVisible(post, userId)) throw notACourse(courseId)
  if (post.creator_id !== userId) throw new AppError('UserNotOwner', 'a class can be tied to your own courses only')
}

/** The 422 of a class's course_id that is not a course the caller may tie a class to. */
export function notACourse (courseId: string): AppError {
  return new AppError('ValidationFailed', `no course with id ${courseId}`, {
    errors: [{ in: 'body', field: '/course_id', rule: 'course', message: 'must be the id of a course' }]
  })
}

/** The rule's passing case in SQL, for a write to select from: the user's own COURSE post (their own is always visible to them). */
export function selectOwnCourse (db: QueryCreator<Database>, courseId: string, userId: string) {
  return db.selectFrom('post').where('post.id', '=', courseId).where('post.type', '=', 'COURSE').where('post.creator_id', '=', userId)
}

const POSITIONED_SORT = { position: 'position', title: 'title', created_at: 'created_at' }
const BY_POSITION = [{ column: 'position', direction: 'asc' as const }]
export const courseHead = cachedRowStatement((db, courseId: string) =>
  db.selectFrom('post').select(['creator_id', 'type', 'published_at']).where('id', '=', courseId)
)
const chapterById = cachedRowStatement((db, chapterId: string) => db.selectFrom('chapter').selectAll().where('id', '=', chapterId))
const chapterInCourse = cachedRowStatement((db, chapterId: string, courseId: string) =>
  db.selectFrom('chapter').selectAll().where('id', '=', chapterId).where('course_id', '=', courseId)
)
const lessonById = cachedRowStatement((db, lessonId: string) => db.selectFrom('lesson').selectAll().where('id', '=', lessonId))
const chapterList = compiledList((db, v: { courseId: string }) => db.selectFrom('chapter').selectAll().where('course_id', '=', v.courseId))
const lessonList = compiledList((db, v: { chapterId: string }) => db.selectFrom('lesson').selectAll().where('chapter_id', '=', v.chapterId))

export async function listChapters (db: Db, courseId: string, viewerId: string | undefined, query: PositionedListQuery, page: Page) {
  await getCourse(db, courseId, viewerId)
  const { rows, total } = await chapterList.page(db, { courseId }, parseSort(query.sort, POSITIONED_SORT, BY_POSITION), page)
  return { items: rows.map(toChapter), total }
}

/** A chapter of a course the viewer cannot see is as missing as one that does not exist. */
export async function getChapter (db: Db, chapterId: string, viewerId: string | undefined): Promise<Chapter> {
  const row = await orNotFound(chapterById(db, chapterId), 'ChapterNotFound', `no chapter with id ${chapterId}`)
  await getCourse(db, row.course_id, viewerId).catch((err: unknown) => {
    throw err instanceof AppError && err.code === 'CourseNotFound' ? chapterNotFound(chapterId) : err
  })
  return toChapter(row)
}

/** The chapter under its own course; under another course it is 404. */
async function chapterOf (db: Db, courseId: string, chapterId: string): Promise<Chapter> {
  const row = await orNotFound(chapterInCourse(db, chapterId, courseId), 'ChapterNotFound', `no chapter with id ${chapterId} in course ${courseId}`)
  return toChapter(row)
}

/** The chapter at its place, read back by its insert (RETURNING). */
export async function createChapter (db: Db, courseId: string, body: ChapterCreate): Promise<Chapter> {
  return toChapter(await db.transaction().execute(async trx => {
    const position = await makeRoom(trx, 'chapter', courseId, body.position)
    const now = writeTimeIso()
    return trx.insertInto('chapter').values({ id: randomUUID(), course_id: courseId, title: body.title, position, created_at: now, updated_at: now })
      .returningAll().executeTakeFirstOrThrow()
  }))
}

export async function listLessons (db: Db, courseId: string, chapterId: string, viewerId: string | undefined, query: PositionedListQuery, page: Page) {
  await getCourse(db, courseId, viewerId)
  await chapterOf(db, courseId, chapterId)
  const { rows, total } = await lessonList.page(db, { chapterId }, parseSort(query.sort, POSITIONED_SORT, BY_POSITION), page)
  return { items: rows.map(toLesson), total }
}

/** Checks the path course → chapter (404 across the wrong parent) before a lesson is added. */
export async function assertChapterOf (db: Db, courseId: string, chapterId: string): Promise<void> {
  await chapterOf(db, courseId, chapterId)
}

/** The lesson at its place, read back by its insert (RETURNING). */
export async function createLesson (db: Db, chapterId: string, body: LessonCreate): Promise<Lesson> {
  return toLesson(await db.transaction().execute(async trx => {
    const position = await makeRoom(trx, 'lesson', chapterId, body.position)
    const now = writeTimeIso()
    return trx
      .insertInto('lesson')
      .values({ id: randomUUID(), chapter_id: chapterId, title: body.title, body: body.body ?? null, position, created_at: now, updated_at: now })
      .returningAll()
      .executeTakeFirstOrThrow()
  }))
}

export async function getLesson (db: Db, lessonId: string, viewerId: string | undefined): Promise<Lesson> {
  const row = await lessonById(db, lessonId)
  if (!row) throw lessonNotFound(lessonId)
  await getChapter(db, row.chapter_id, viewerId).catch((err: unknown) => {
    throw err instanceof AppError && err.code === 'ChapterNotFound' ? lessonNotFound(lessonId) : err
  })
  return toLesson(row)
}

const PARENT = {
  chapter: { parentTable: 'post', parentColumn: 'course_id' },
  lesson: { parentTable: 'chapter', parentColumn: 'chapter_id' }
} as const

/**
 * Inside the insert's transaction: the position the new item takes (absent or past the end:
 * appended) after shifting the items at and after it down by one. The parent row is locked first
 * so two concurrent inserts cannot take the same place.
 */
async function makeRoom (trx: Db, table: 'chapter' | 'lesson', parentId: string, wanted: number | undefined): Promise<number> {
  const { parentTable, parentColumn } = PARENT[table]
  // Both tables share the shape (parent id, position); the casts only name one of them for Kysely's types.
  const t = table as 'chapter'
  const column = parentColumn as 'course_id'
  await lockForUpdate(
    trx,
    trx
      .selectFrom(parentTable as 'post')
      .select('id')
      .where('id', '=', parentId)
  )
  const { last } = await trx
    .selectFrom(t)
    .select(eb => eb.fn.max('position').as('last'))
    .where(column, '=', parentId)
    .executeTakeFirstOrThrow()
  const end = Number(last ?? 0) + 1
  const position = wanted === undefined || wanted > end ? end : wanted
  if (position < end) {
    await trx
      .updateTable(t)
      .set(eb => ({ position: eb('position', '+', 1), updated_at: writeTimeIso() }))
      .where(column, '=', parentId)
      .where('position', '>=', position)
      .execute()
  }
  return position
}

/**
 * PUT and PATCH of a chapter: replaces its title and, when a position is given, moves it there.
 * The guard and the merge judge the chapter as it is written (changeRow). A move shifts the
 * chapters between its old and new place: it is made under the course's lock, as a create, so
 * moves and inserts take turns within a course.
 */
export async function updateChapter (
  db: Db,
  chapterId: string,
  viewerId: string,
  change: Change<Chapter, ChapterCreate>,
  guard: Guard<{ course: CourseOwner; chapter: Chapter }>
): Promise<Chapter> {
  return changeRow(db, {
    lock: db => lockChapterRows(db, chapterId),
    read: async db => {
      const row = await chapterToChange(db, chapterId)
      // the answer getChapter gives: a chapter of a course the viewer cannot see is as missing as one that is not there
      if (!row || !isCourseFor(row, viewerId)) throw chapterNotFound(chapterId)
      const chapter = toChapter(row)
      guard({ course: { id: row.course_id, creator: { id: row.creator_id } }, chapter })
      const body = bodyOf(change, chapter)
      return { version: row.version, chapter, title: body.title, position: body.position, updatedAt: writeTimeIso() }
    },
    needsLock: ({ chapter, position }) => moves(chapter, position),
    statement: async (db, { version, chapter, title, updatedAt }) => {
      const [row] = await renameChapterReturning(db, undefined, { id: chapterId, courseId: chapter.course_id, version: version!, title, updatedAt })
      return row && toChapter(row)
    },
    steps: async (trx, { chapter, title, position: wanted, updatedAt }) => {
      const position = await move(trx, 'chapter', chapter.course_id, chapter, wanted)
      return toChapter(await trx.updateTable('chapter').set({ title, position, updated_at: updatedAt }).where('id', '=', chapterId)
        .returningAll().executeTakeFirstOrThrow())
    }
  })
}

/** A COURSE post the viewer may see: what a chapter's or a lesson's reads ask of their course. */
function isCourseFor (post: { type: string, creator_id: string, published_at: Date | string | null }, viewerId: string): boolean {
  return post.type === 'COURSE' && isVisible(post, viewerId)
}

/** A change asks for a place other than the item's: the items between move by one. */
function moves (item: { position: number }, wanted: number | undefined): boolean {
  return wanted !== undefined && wanted !== item.position
}

/** The chapter a change reads, with its course's owner, type and visibility and the row's version (changeRow), in one read. */
const chapterToChange = cachedRowStatement((db, chapterId: string) =>
  db.selectFrom('chapter').innerJoin('post', 'post.id', 'chapter.course_id')
    .selectAll('chapter').select(['post.creator_id', 'post.type', 'post.published_at', rowVersion(db, 'chapter').as('version')])
    .where('chapter.id', '=', chapterId))

/** A change that keeps the chapter's place in one statement (changeRow's), where it still has the version read: its new title, read back. */
type ChapterRename = { id: string, courseId: string, version: string, title: string, updatedAt: string }
const renameChapterReturning = cachedStatementPerShape((db, _: undefined, v: ChapterRename) =>
  db.updateTable('chapter').set({ title: v.title, updated_at: v.updatedAt })
    .where('chapter.id', '=', v.id).where('chapter.course_id', '=', v.courseId).where(sameVersion('chapter', v.version)).returningAll())

/**
 * The locks of a change of a chapter: its course's row first, which moves, inserts and removals
 * in the course take, then the chapter's own, which a change of its title alone meets.
 */
function lockChapterRows (db: Db, chapterId: string) {
  return [
    db.selectFrom('post').select('post.id')
      .where('post.id', '=', eb => eb.selectFrom('chapter').select('chapter.course_id').where('chapter.id', '=', chapterId)),
    db.selectFrom('chapter').select('chapter.id').where('chapter.id', '=', chapterId)
  ]
}

/** The PUT body that keeps a chapter as it is: what a PATCH merges into. */
export function chapterFields (chapter: Chapter): ChapterCreate {
  return { title: chapter.title, position: chapter.position }
}

/** Removes a chapter with its lessons (ON DELETE CASCADE); the later chapters move up one place. */
export async function deleteChapter (db: Db, chapterId: string, viewerId: string, guard: Guard<{ course: CourseOwner; chapter: Chapter }>): Promise<void> {
  await db.transaction().execute(async trx => {
    const current = await lockChapter(trx, chapterId, viewerId)
    guard(current)
    await trx.deleteFrom('chapter').where('id', '=', chapterId).execute()
    await closeGap(trx, 'chapter', current.course.id, current.chapter.position)
  })
}

/** The chapter as the viewer may see it (404 ChapterNotFound) and its course, the course's row and the chapter's locked first. */
async function lockChapter (trx: Db, chapterId: string, viewerId: string): Promise<{ course: Course; chapter: Chapter }> {
  for (const query of lockChapterRows(trx, chapterId)) await lockForUpdate(trx, query)
  const chapter = await getChapter(trx, chapterId, viewerId)
  return { course: await getCourse(trx, chapter.course_id, viewerId), chapter }
}

/**
 * PUT and PATCH of a lesson: replaces its title and body and, when a position is given, moves it
 * within its chapter. The guard and the merge judge the lesson as it is written (changeRow); a
 * move is made under the chapter's lock, as a create.
 */
export async function updateLesson (
  db: Db,
  lessonId: string,
  viewerId: string,
  change: Change<Lesson, LessonCreate>,
  guard: Guard<{ course: CourseOwner; lesson: Lesson }>
): Promise<Lesson> {
  return changeRow(db, {
    lock: db => lockLessonRows(db, lessonId),
    read: async db => {
      const row = await lessonToChange(db, lessonId)
      // the answer getLesson gives: one under a course the viewer cannot see is as missing as one that is not there
      if (!row || !isCourseFor(row, viewerId)) throw lessonNotFound(lessonId)
      const lesson = toLesson(row)
      guard({ course: { id: row.course_id, creator: { id: row.creator_id } }, lesson })
      const body = bodyOf(change, lesson)
      return { version: row.version, lesson, title: body.title, body: body.body ?? null, position: body.position, updatedAt: writeTimeIso() }
    },
    needsLock: ({ lesson, position }) => moves(lesson, position),
    statement: async (db, { version, lesson, title, body, updatedAt }) => {
      const [row] = await rewriteLessonReturning(db, undefined, { id: lessonId, chapterId: lesson.chapter_id, version: version!, title, body, updatedAt })
      return row && toLesson(row)
    },
    steps: async (trx, { lesson, title, body, position: wanted, updatedAt }) => {
      const position = await move(trx, 'lesson', lesson.chapter_id, lesson, wanted)
      return toLesson(await trx.updateTable('lesson').set({ title, body, position, updated_at: updatedAt }).where('id', '=', lessonId)
        .returningAll().executeTakeFirstOrThrow())
    }
  })
}

/** The lesson a change reads, with its course's owner, type and visibility and the row's version (changeRow), in one read. */
const lessonToChange = cachedRowStatement((db, lessonId: string) =>
  db.selectFrom('lesson').innerJoin('chapter', 'chapter.id', 'lesson.chapter_id').innerJoin('post', 'post.id', 'chapter.course_id')
    .selectAll('lesson').select(['chapter.course_id', 'post.creator_id', 'post.type', 'post.published_at', rowVersion(db, 'lesson').as('version')])
    .where('lesson.id', '=', lessonId))

/** A change that keeps the lesson's place in one statement (changeRow's), where it still has the version read: its new title and body, read back. */
type LessonRewrite = { id: string, chapterId: string, version: string, title: string, body: string | null, updatedAt: string }
const rewriteLessonReturning = cachedStatementPerShape((db, _: undefined, v: LessonRewrite) =>
  db.updateTable('lesson').set({ title: v.title, body: v.body, updated_at: v.updatedAt })
    .where('lesson.id', '=', v.id).where('lesson.chapter_id', '=', v.chapterId).where(sameVersion('lesson', v.version)).returningAll())

/** The locks of a change of a lesson: its chapter's row first, which moves, inserts and removals in the chapter take, then the lesson's own. */
function lockLessonRows (db: Db, lessonId: string) {
  return [
    db.selectFrom('chapter').select('chapter.id')
      .where('chapter.id', '=', eb => eb.selectFrom('lesson').select('lesson.chapter_id').where('lesson.id', '=', lessonId)),
    db.selectFrom('lesson').select('lesson.id').where('lesson.id', '=', lessonId)
  ]
}

/** The PUT body that keeps a lesson as it is: what a PATCH merges into. */
export function lessonFields (lesson: Lesson): LessonCreate {
  return { title: lesson.title, body: lesson.body, position: lesson.position }
}

/** Removes a lesson; the later lessons of its chapter move up one place. */
export async function deleteLesson (db: Db, lessonId: string, viewerId: string, guard: Guard<{ course: CourseOwner; lesson: Lesson }>): Promise<void> {
  await db.transaction().execute(async trx => {
    const current = await lockLesson(trx, lessonId, viewerId)
    guard(current)
    await trx.deleteFrom('lesson').where('id', '=', lessonId).execute()
    await closeGap(trx, 'lesson', current.lesson.chapter_id, current.lesson.position)
  })
}

/** The lesson as the viewer may see it (404 LessonNotFound) and its course, the chapter's row and the lesson's locked first. */
async function lockLesson (trx: Db, lessonId: string, viewerId: string): Promise<{ course: Course; lesson: Lesson }> {
  for (const query of lockLessonRows(trx, lessonId)) await lockForUpdate(trx, query)
  const lesson = await getLesson(trx, lessonId, viewerId)
  const { course_id: courseId } = await getChapter(trx, lesson.chapter_id, viewerId)
  return { course: await getCourse(trx, courseId, viewerId), lesson }
}

/**
 * Inside a change's transaction, the parent and the item locked: the place an item moves to (absent: where it
 * is; past the end: the last), shifting the items between its old and new place by one, so the
 * places stay 1..n with none taken twice.
 */
async function move (
  trx: Db,
  table: 'chapter' | 'lesson',
  parentId: string,
  item: { id: string; position: number },
  wanted: number | undefined
): Promise<number> {
  if (wanted === undefined || wanted === item.position) return item.position
  // Both tables share the shape (parent id, position); the casts only name one of them for Kysely's types.
  const t = table as 'chapter'
  const column = PARENT[table].parentColumn as 'course_id'
  const { n } = await trx
    .selectFrom(t)
    .select(eb => eb.fn.countAll<number | string>().as('n'))
    .where(column, '=', parentId)
    .executeTakeFirstOrThrow()
  const to = Math.min(wanted, Number(n))
  if (to === item.position) return to
  const down = to < item.position
  await trx
    .updateTable(t)
    .set(eb => ({ position: eb('position', down ? '+' : '-', 1), updated_at: writeTimeIso() }))
    .where(column, '=', parentId)
    .where('id', '!=', item.id)
    .where('position', '>=', down ? to : item.position + 1)
    .where('position', '<=', down ? item.position - 1 : to)
    .execute()
  return to
}

/** After a removal, the parent locked: the items after the removed place move up one. */
async function closeGap (trx: Db, table: 'chapter' | 'lesson', parentId: string, removed: number): Promise<void> {
  const t = table as 'chapter'
  const column = PARENT[table].parentColumn as 'course_id'
  await trx
    .updateTable(t)
    .set(eb => ({ position: eb('position', '-', 1), updated_at: writeTimeIso() }))
    .where(column, '=', parentId)
    .where('position', '>', removed)
    .execute()
}
