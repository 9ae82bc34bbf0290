import { randomUUID } from 'node:crypto'
import { cachedRowStatement, cachedStatementPerShape, type Values } from '../db/statement-cache.js'
import type { Insertable, Selectable, SelectQueryBuilder } from 'kysely'
import type { Class, ClassCreate, ClassListQuery, Student, StudentCreate, StudentListQuery } from '../../schemas/classes.js'
import type { Db } from '../db/dialect.js'
import type { ClassTable, Database, StudentTable } from '../db/schema.js'
import { writeTogether } from '../db/write-together.js'
import { whenParentGone } from '../db/unique-violation.js'
import { changeRow, rowVersion, sameVersion } from '../db/row-change.js'
import { lockForUpdate } from '../db/row-lock.js'
import { formatDateTime } from '../db/date-time-format.js'
import { clockIso, writeTimeIso } from '../db/clock.js'
import { assertOwnCourse, checkOwnCourse, courseHead, courseVisibleTo, notACourse, selectOwnCourse, type CourseHead } from './courses.js'
import { compiledList, type Page } from '../db/paging.js'
import { parseSort } from './list.js'
import { AppError } from '../../schemas/problems.js'
import { PERSON_COLUMNS, toPerson, type PersonRow } from './person.js'
import { bodyOf, type Change } from './merge-patch.js'

/**
 * The route's owner and If-Match checks, run against the row as it is: as a change writes it
 * (changeRow), or locked inside a delete's transaction, so two writers holding the same ETag
 * cannot both pass.
 */
export type Guard<T> = (current: T) => void

/**
 * Classes (optionally teaching one of the owner's courses) and their students, whose data only the
 * class owner sees. A class shows its course's id, so it follows the course's visibility: the
 * classes of a draft or scheduled course are seen by the course's creator only, like the course.
 */

/** Who reads, and when: what decides which courses are out (a type alias: list values must fit Values). */
type Viewer = { viewer_id: string, now: string }

/** A class's columns and its owner's, from `class` (the table, or a CTE of its rows named so). */
function withOwner<Q extends SelectQueryBuilder<Database & { class: ClassTable }, 'class', {}>> (from: Q) {
  return (from as unknown as SelectQueryBuilder<Database, 'class', {}>)
    .innerJoin('user', 'user.id', 'class.owner_id')
    .innerJoin('profile', 'profile.id', 'class.owner_id')
    .selectAll('class').select([...PERSON_COLUMNS])
}

function selectClasses (db: Db, v: Viewer) {
  return withOwner(db.selectFrom('class'))
    .where(eb => eb.or([
      eb('class.course_id', 'is', null),
      eb('class.owner_id', '=', v.viewer_id),
      eb.exists(courseVisibleTo(eb.selectFrom('post').select('post.id').whereRef('post.id', '=', 'class.course_id'), v))
    ]))
}

const viewer = (viewerId: string): Viewer => ({ viewer_id: viewerId, now: clockIso() })

const classNotFound = (classId: string) => new AppError('ClassNotFound', `no class with id ${classId}`)
const studentNotFound = (classId: string, studentId: string) =>
  new AppError('StudentNotFound', `no student with id ${studentId} in class ${classId}`)

function toClass (row: Selectable<ClassTable> & PersonRow): Class {
  return {
    id: row.id,
    owner: toPerson(row.owner_id, row),
    name: row.name,
    course_id: row.course_id,
    starts_date: row.starts_date,
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

function toStudent (row: Selectable<StudentTable>): Student {
  return {
    id: row.id,
    class_id: row.class_id,
    first_name: row.first_name,
    last_name: row.last_name,
    sex: row.sex,
    email: row.email,
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

const CLASS_SORT = { name: 'class.name', starts_date: 'class.starts_date', created_at: 'class.created_at' }

const classList = compiledList((db, v: Viewer & { owner_id?: string, course_id?: string }) => {
  let q = selectClasses(db, v)
  if (v.owner_id !== undefined) q = q.where('class.owner_id', '=', v.owner_id)
  if (v.course_id !== undefined) q = q.where('class.course_id', '=', v.course_id)
  return q
})

/** The classes the viewer may see: a hidden course's classes are left out of the page and the total alike. */
export async function listClasses (db: Db, viewerId: string, query: ClassListQuery, page: Page) {
  const sort = parseSort(query.sort, CLASS_SORT, [{ column: 'class.created_at', direction: 'desc' }], 'class.id', ['class.starts_date'])
  const { rows, total } = await classList.page(db, { ...viewer(viewerId), owner_id: query.owner_id, course_id: query.course_id }, sort, page)
  return { items: rows.map(toClass), total }
}

const classById = cachedRowStatement((db, classId: string, viewerId: string, now: string) =>
  selectClasses(db, { viewer_id: viewerId, now }).where('class.id', '=', classId))
const studentInClass = cachedRowStatement((db, studentId: string, classId: string) => db.selectFrom('student').selectAll()
  .where('id', '=', studentId).where('class_id', '=', classId))

/** The class as the viewer may see it; one of a hidden course is 404, as a missing one, so it does not leak. */
export async function getClass (db: Db, classId: string, viewerId: string): Promise<Class> {
  const row = await classById(db, classId, viewerId, clockIso())
  if (!row) throw classNotFound(classId)
  return toClass(row)
}

/**
 * The class and its read-back with its owner (who sees it whatever its course): one statement on
 * PostgreSQL (writeTogether's), which inserts a class tied to a course only from the caller's own
 * course; nothing inserted, the course is refused as assertOwnCourse refuses it.
 */
export async function createClass (db: Db, ownerId: string, body: ClassCreate): Promise<Class> {
  const now = writeTimeIso()
  const row = {
    id: randomUUID(),
    owner_id: ownerId,
    name: body.name,
    course_id: body.course_id ?? null,
    starts_date: body.starts_date ?? null,
    created_at: now,
    updated_at: now
  }
  const inserted = await orCourseGone(db, row.course_id, ownerId, writeTogether(
    db,
    async db => (await insertClassReturning(db, undefined, row))[0],
    async trx => {
      if (row.course_id !== null) await assertOwnCourse(trx, row.course_id, ownerId)
      await trx.insertInto('class').values(row).execute()
      return classById(trx, row.id, ownerId, clockIso())
    }
  ))
  if (inserted) return toClass(inserted)
  // Only a course can stop the insert. The course as it is now says why; should it pass now, it
  // was the caller's post but not yet a COURSE when the insert ran (ids and creators never change).
  await assertOwnCourse(db, row.course_id!, ownerId)
  throw notACourse(row.course_id!)
}

const CLASS_COLUMNS = ['id', 'owner_id', 'name', 'course_id', 'starts_date', 'created_at', 'updated_at'] as const

/** The insert (writeTogether's), of a class tied to a course from the caller's own course alone, read back with its owner. */
const insertClassReturning = cachedStatementPerShape((db, _: undefined, row: Insertable<ClassTable> & Values) => {
  const courseId = row.course_id
  return withOwner(db.with('new_class', q => (courseId == null
    ? q.insertInto('class').values(row)
    : q.insertInto('class').columns(CLASS_COLUMNS)
      .expression(selectOwnCourse(q, courseId, row.owner_id).select(eb => CLASS_COLUMNS.map(c => eb.val(row[c]).as(c))))
  ).returningAll()).selectFrom('new_class as class'))
})

/**
 * PUT and PATCH: replaces the name, course and start date (absent or null: none). A course must
 * still be one of the caller's own (as on create: 422, or 403 for another creator's published one).
 * The guard, the merge and the course rule judge the class as it is written (changeRow).
 */
export async function updateClass (db: Db, classId: string, viewerId: string, change: Change<Class, ClassCreate>,
  guard: Guard<Class>): Promise<Class> {
  return changeRow(db, {
    lock: db => db.selectFrom('class').select('id').where('id', '=', classId),
    read: async db => {
      const row = await classToChange(db, classId, viewerId, clockIso())
      if (!row) throw classNotFound(classId)
      const current = toClass(row)
      guard(current)
      const body = bodyOf(change, current)
      const courseId = body.course_id ?? null
      // the course the class keeps was read with it; another one is read now
      if (courseId !== null) checkOwnCourse(courseId === row.course_id ? keptCourse(row) : await courseHead(db, courseId), courseId, viewerId)
      return { version: row.version, columns: { name: body.name, course_id: courseId, starts_date: body.starts_date ?? null, updated_at: writeTimeIso() } }
    },
    statement: async (db, { version, columns }) => {
      const [row] = await orCourseGone(db, columns.course_id, viewerId, updateClassReturning(db, undefined, { ...columns, id: classId, version: version! }))
      return row && toClass(row)
    },
    steps: async (trx, { columns }) => {
      await trx.updateTable('class').set(columns).where('id', '=', classId).execute()
      return getClass(trx, classId, viewerId)
    }
  })
}

/** A course deleted between its check and the class's write fails the foreign key: refused as a missing course is, not a 500. */
async function orCourseGone<T> (db: Db, courseId: string | null, ownerId: string, write: Promise<T>): Promise<T> {
  return whenParentGone(write, async err => {
    if (courseId === null) return err
    await assertOwnCourse(db, courseId, ownerId)
    return notACourse(courseId)
  })
}

/** The class a change reads, as getClass reads it, with its course as the course rule judges it and the row's version (changeRow), in one read. */
const classToChange = cachedRowStatement((db, classId: string, viewerId: string, now: string) =>
  selectClasses(db, { viewer_id: viewerId, now }).where('class.id', '=', classId)
    .leftJoin('post as course', 'course.id', 'class.course_id')
    .select(['course.creator_id as course_creator_id', 'course.type as course_type', 'course.published_at as course_published_at',
      rowVersion(db, 'class').as('version')]))

type ClassToChange = NonNullable<Awaited<ReturnType<typeof classToChange>>>

function keptCourse (row: ClassToChange): CourseHead | undefined {
  if (row.course_creator_id === null || row.course_type === null) return undefined
  return { creator_id: row.course_creator_id, type: row.course_type, published_at: row.course_published_at }
}

/** The update in one statement (changeRow's), where the class still has the version read, read back with its owner. */
type ClassChange = { id: string, version: string, name: string, course_id: string | null, starts_date: string | null, updated_at: string }
const updateClassReturning = cachedStatementPerShape((db, _: undefined, v: ClassChange) => {
  const { id, version, ...columns } = v
  return withOwner(db.with('changed', q => q.updateTable('class').set(columns)
    .where('class.id', '=', id).where(sameVersion('class', version)).returningAll())
    .selectFrom('changed as class'))
})

/** The PUT body that keeps a class as it is: what a PATCH merges into. */
export function classFields (cls: Class): ClassCreate {
  return { name: cls.name, course_id: cls.course_id, starts_date: cls.starts_date }
}

/** Closes a class: its students go with it, in the same transaction (ON DELETE CASCADE). */
export async function deleteClass (db: Db, classId: string, viewerId: string, guard: Guard<Class>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    guard(await lockClass(trx, classId, viewerId))
    await trx.deleteFrom('class').where('id', '=', classId).execute()
  })
}

/** The class as the viewer may see it (404 otherwise), locked until the transaction ends. */
async function lockClass (trx: Db, classId: string, viewerId: string): Promise<Class> {
  await lockForUpdate(trx, trx.selectFrom('class').select('id').where('id', '=', classId))
  return getClass(trx, classId, viewerId)
}

const STUDENT_SORT = { first_name: 'first_name', last_name: 'last_name', created_at: 'created_at' }

const studentList = compiledList((db, v: { classId: string, sex?: string }) => {
  const q = db.selectFrom('student').selectAll().where('class_id', '=', v.classId)
  return v.sex === undefined ? q : q.where('sex', '=', v.sex as Student['sex'])
})

export async function listStudents (db: Db, classId: string, query: StudentListQuery, page: Page) {
  const sort = parseSort(query.sort, STUDENT_SORT, [{ column: 'created_at', direction: 'asc' }], 'id', ['last_name'])
  const { rows, total } = await studentList.page(db, { classId, sex: query.sex }, sort, page)
  return { items: rows.map(toStudent), total }
}

/** A student is found only in their own class: under another class it is 404. */
export async function getStudent (db: Db, classId: string, studentId: string): Promise<Student> {
  const row = await studentInClass(db, studentId, classId)
  if (!row) throw studentNotFound(classId, studentId)
  return toStudent(row)
}

/** The student, read back by the insert itself (RETURNING, on both databases). */
export async function createStudent (db: Db, classId: string, body: StudentCreate): Promise<Student> {
  const now = writeTimeIso()
  return toStudent(await db.insertInto('student').values({
    id: randomUUID(),
    class_id: classId,
    first_name: body.first_name,
    last_name: body.last_name ?? null,
    sex: body.sex,
    email: body.email ?? null,
    created_at: now,
    updated_at: now
  }).returningAll().executeTakeFirstOrThrow())
}

/**
 * PUT and PATCH: replaces the student's writable fields. The guard sees the class (its owner) and
 * the student; it and the merge judge the student as it is written (changeRow).
 */
export async function updateStudent (db: Db, classId: string, studentId: string, viewerId: string,
  change: Change<Student, StudentCreate>, guard: Guard<{ cls: Class, student: Student }>): Promise<Student> {
  return changeRow(db, {
    lock: db => db.selectFrom('student').select('id').where('id', '=', studentId).where('class_id', '=', classId),
    read: async db => {
      const row = await studentToChange(db, classId, studentId, viewerId, clockIso())
      // the answers the GET gives, in its order: the class's 404, then the student's
      if (!row) throw classNotFound(classId)
      const student = studentOf(row)
      if (!student) throw studentNotFound(classId, studentId)
      guard({ cls: toClass(row), student })
      const body = bodyOf(change, student)
      const columns = { first_name: body.first_name, last_name: body.last_name ?? null, sex: body.sex, email: body.email ?? null, updated_at: writeTimeIso() }
      return { version: row.version, columns }
    },
    statement: async (db, { version, columns }) => {
      const [row] = await updateStudentReturning(db, undefined, { ...columns, id: studentId, classId, version: version! })
      return row && toStudent(row)
    },
    steps: async (trx, { columns }) => {
      await trx.updateTable('student').set(columns).where('id', '=', studentId).where('class_id', '=', classId).execute()
      return getStudent(trx, classId, studentId)
    }
  })
}

/**
 * The student a change reads: the class as getClass reads it, with the student in it (null
 * columns where there is none) and the student row's version (changeRow), in one read.
 */
const studentToChange = cachedRowStatement((db, classId: string, studentId: string, viewerId: string, now: string) =>
  selectClasses(db, { viewer_id: viewerId, now }).where('class.id', '=', classId)
    .leftJoin('student', join => join.onRef('student.class_id', '=', 'class.id').on('student.id', '=', studentId))
    .select([
      'student.id as student_id', 'student.first_name as student_first_name', 'student.last_name as student_last_name',
      'student.sex as student_sex', 'student.email as student_email', 'student.created_at as student_created_at',
      'student.updated_at as student_updated_at', rowVersion(db, 'student').as('version')
    ]))

function studentOf (row: NonNullable<Awaited<ReturnType<typeof studentToChange>>>): Student | undefined {
  if (row.student_id === null) return undefined
  return toStudent({
    id: row.student_id,
    class_id: row.id,
    first_name: row.student_first_name!,
    last_name: row.student_last_name,
    sex: row.student_sex!,
    email: row.student_email,
    created_at: row.student_created_at!,
    updated_at: row.student_updated_at!
  })
}

/** The update in one statement (changeRow's), where the student is still in the class with the version read, read back. */
type StudentChange = {
  id: string, classId: string, version: string, first_name: string, last_name: string | null, sex: Student['sex'], email: string | null, updated_at: string
}
const updateStudentReturning = cachedStatementPerShape((db, _: undefined, v: StudentChange) => {
  const { id, classId, version, ...columns } = v
  return db.updateTable('student').set(columns)
    .where('student.id', '=', id).where('student.class_id', '=', classId).where(sameVersion('student', version)).returningAll()
})

/** The PUT body that keeps a student as they are: what a PATCH merges into. */
export function studentFields (student: Student): StudentCreate {
  return { first_name: student.first_name, last_name: student.last_name, sex: student.sex, email: student.email }
}

export async function deleteStudent (db: Db, classId: string, studentId: string, viewerId: string,
  guard: Guard<{ cls: Class, student: Student }>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    guard(await lockStudent(trx, classId, studentId, viewerId))
    await trx.deleteFrom('student').where('id', '=', studentId).where('class_id', '=', classId).execute()
  })
}

/** The class as the viewer may see it (404 ClassNotFound), then its student (404 StudentNotFound), locked. */
async function lockStudent (trx: Db, classId: string, studentId: string, viewerId: string): Promise<{ cls: Class, student: Student }> {
  const cls = await getClass(trx, classId, viewerId)
  await lockForUpdate(trx, trx.selectFrom('student').select('id').where('id', '=', studentId).where('class_id', '=', classId))
  return { cls, student: await getStudent(trx, classId, studentId) }
}
