import { randomUUID } from 'node:crypto'
import { cachedRowStatement, cachedStatementPerShape, type Values } from '../db/statement-cache.js'
import type { Insertable, Selectable, SelectQueryBuilder } from 'kysely'
import type { Class, ClassCreate, ClassListQuery, Student, StudentCreate, StudentListQuery } from '../../schemas/classes.js'
import type { Db } from '../db/dialect.js'
import type { ClassTable, Database, StudentTable } from '../db/schema.js'
import { writeTogether } from '../db/write-together.js'
import { lockForUpdate } from '../db/row-lock.js'
import { formatDateTime } from '../db/date-time-format.js'
import { clockIso, writeTimeIso } from '../db/clock.js'
import { assertOwnCourse, courseVisibleTo } from './courses.js'
import { compiledList, type Page } from '../db/paging.js'
import { parseSort } from './list.js'
import { orNotFound } from './errors.js'
import { PERSON_COLUMNS, toPerson, type PersonRow } from './person.js'
import { bodyOf, type Change } from './merge-patch.js'

/**
 * The route's owner and If-Match checks, run inside the change's transaction against the row
 * as it is, locked, so two writers holding the same ETag cannot both pass.
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
  const { now } = viewer(viewerId)
  return toClass(await orNotFound(classById(db, classId, viewerId, now),
    'ClassNotFound', `no class with id ${classId}`))
}

/** The class and its read-back with its owner (who sees it whatever its course): one statement on PostgreSQL (writeTogether's). */
export async function createClass (db: Db, ownerId: string, body: ClassCreate): Promise<Class> {
  if (body.course_id) await assertOwnCourse(db, body.course_id, ownerId)
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
  return toClass(await writeTogether(
    db,
    async db => (await insertClassReturning(db, undefined, row))[0],
    async trx => {
      await trx.insertInto('class').values(row).execute()
      return (await classById(trx, row.id, ownerId, clockIso()))!
    }
  ))
}

const insertClassReturning = cachedStatementPerShape((db, _: undefined, row: Insertable<ClassTable> & Values) =>
  withOwner(db.with('new_class', q => q.insertInto('class').values(row).returningAll()).selectFrom('new_class as class')))

/**
 * PUT and PATCH: replaces the name, course and start date (absent or null: none). A course must
 * still be one of the caller's own (as on create: 422, or 403 for another creator's published one).
 */
export async function updateClass (db: Db, classId: string, viewerId: string, change: Change<Class, ClassCreate>,
  guard: Guard<Class>): Promise<Class> {
  return db.transaction().execute(async (trx) => {
    const current = await lockClass(trx, classId, viewerId)
    guard(current)
    const body = bodyOf(change, current)
    if (body.course_id) await assertOwnCourse(trx, body.course_id, viewerId)
    await trx.updateTable('class')
      .set({ name: body.name, course_id: body.course_id ?? null, starts_date: body.starts_date ?? null, updated_at: writeTimeIso() })
      .where('id', '=', classId).execute()
    return getClass(trx, classId, viewerId)
  })
}

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
  return toStudent(await orNotFound(studentInClass(db, studentId, classId),
    'StudentNotFound', `no student with id ${studentId} in class ${classId}`))
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
 * the student as they are, the student locked.
 */
export async function updateStudent (db: Db, classId: string, studentId: string, viewerId: string,
  change: Change<Student, StudentCreate>, guard: Guard<{ cls: Class, student: Student }>): Promise<Student> {
  return db.transaction().execute(async (trx) => {
    const current = await lockStudent(trx, classId, studentId, viewerId)
    guard(current)
    const body = bodyOf(change, current.student)
    await trx.updateTable('student').set({
      first_name: body.first_name, last_name: body.last_name ?? null, sex: body.sex, email: body.email ?? null, updated_at: writeTimeIso()
    }).where('id', '=', studentId).where('class_id', '=', classId).execute()
    return getStudent(trx, classId, studentId)
  })
}

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
