import { Type, type Static } from './typebox.js'
import { DateOnly, DateTime, LIMIT_MAX, OFFSET_MAX, ListOf, ListQuery, OptionalOrNull, PageQuery, Params, Uuid, ref, Nullable } from './common.js'
import { MergePatchOf } from './merge-patch.js'
import { UserSummary } from './posts.js'

export const Class = Type.Object({
  id: Uuid,
  owner: ref(UserSummary),
  name: Type.String(),
  course_id: Nullable(Uuid),
  starts_date: Nullable(DateOnly),
  created_at: DateTime,
  updated_at: DateTime
}, { $id: 'Class', title: 'Class', additionalProperties: false })
export type Class = Static<typeof Class>

/** POST and PUT take the same body; PUT replaces, so an absent course_id or starts_date becomes null. */
export const ClassCreate = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  course_id: OptionalOrNull(Type.String({ format: 'uuid', description: 'a COURSE post of the caller' })),
  starts_date: OptionalOrNull(DateOnly)
}, { $id: 'ClassCreate', title: 'ClassCreate', additionalProperties: false })
export type ClassCreate = Static<typeof ClassCreate>

export const ClassPatch = MergePatchOf(ClassCreate, {
  $id: 'ClassPatch',
  title: 'ClassPatch',
  description: 'JSON Merge Patch of ClassCreate: a member present replaces the field, null clears course_id or starts_date, ' +
    'an absent one is kept'
})
export type ClassPatch = Static<typeof ClassPatch>

export const ClassList = ListOf('classes', ref(Class), 'ClassList')

export const CLASS_SORTABLE = ['name', 'starts_date', 'created_at'] as const
export const ClassListQuery = ListQuery(CLASS_SORTABLE, {
  owner_id: Type.Optional(Uuid),
  course_id: Type.Optional(Uuid)
}, '-created_at')
export type ClassListQuery = Static<typeof ClassListQuery>

/** One string enum (not a union of literals), so a bad value reports one rule, not three. */
export const Sex = Type.Unsafe<'F' | 'M' | 'X'>(Type.String({ enum: ['F', 'M', 'X'], description: 'F, M or X' }))

export const Student = Type.Object({
  id: Uuid,
  class_id: Uuid,
  first_name: Type.String(),
  last_name: Nullable(Type.String()),
  sex: Sex,
  email: Nullable(Type.String()),
  created_at: DateTime,
  updated_at: DateTime
}, { $id: 'Student', title: 'Student', additionalProperties: false })
export type Student = Static<typeof Student>

/** POST and PUT take the same body; PUT replaces, so an absent last_name or email becomes null. */
export const StudentCreate = Type.Object({
  first_name: Type.String({ minLength: 1, maxLength: 128 }),
  last_name: OptionalOrNull(Type.String({ minLength: 1, maxLength: 128 })),
  sex: Sex,
  email: OptionalOrNull(Type.String({ format: 'email', maxLength: 254 }))
}, { $id: 'StudentCreate', title: 'StudentCreate', additionalProperties: false })
export type StudentCreate = Static<typeof StudentCreate>

export const StudentPatch = MergePatchOf(StudentCreate, {
  $id: 'StudentPatch',
  title: 'StudentPatch',
  description: 'JSON Merge Patch of StudentCreate: a member present replaces the field, null clears last_name or email, ' +
    'an absent one is kept'
})
export type StudentPatch = Static<typeof StudentPatch>

export const StudentList = ListOf('students', ref(Student), 'StudentList')

/**
 * Students page by limit/offset or by page/count (1-based), never both (422).
 * limit/offset carry no defaults here, so a request that mixes the forms can be told apart.
 */
const { default: _limitDefault, ...limitRule } = PageQuery.limit
const { default: _offsetDefault, ...offsetRule } = PageQuery.offset
export const STUDENT_SORTABLE = ['first_name', 'last_name', 'created_at'] as const
const studentBase = ListQuery(STUDENT_SORTABLE, {
  sex: Type.Optional(Sex)
}, 'created_at')
// one paging form at a time: with limit or offset, neither page nor count
const NOT_PAGE_FORM = { properties: { page: { not: {} }, count: { not: {} } } }

export const StudentListQuery = Type.Object({
  ...studentBase.properties,
  limit: Type.Optional(Type.Integer({ ...limitRule, description: 'page size (default 10); not with page/count' })),
  offset: Type.Optional(Type.Integer({ ...offsetRule, description: 'items skipped (default 0); not with page/count' })),
  // the offset a page stands for stays within OFFSET_MAX at any count
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: Math.floor(OFFSET_MAX / LIMIT_MAX), description: '1-based page number; not with limit/offset' })),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: LIMIT_MAX, description: 'page size of the page form (default 10)' }))
}, { additionalProperties: false, dependencies: { limit: NOT_PAGE_FORM, offset: NOT_PAGE_FORM } })
export type StudentListQuery = Static<typeof StudentListQuery>

export const ClassParams = Params({ classId: Uuid })
export const StudentParams = Params({ classId: Uuid, studentId: Uuid })
