import { Type, type Static } from './typebox.js'
import { DateTime, ListOf, ListQuery, OFFSET_MAX, OptionalOrNull, Params, Uuid, ref, Nullable } from './common.js'
import { MergePatchOf } from './merge-patch.js'
import { Post } from './posts.js'

/** A course is a post of type COURSE, shown as the post plus how many chapters it has. */
export const Course = Type.Object({
  ...Post.properties,
  chapters_count: Type.Integer({ minimum: 0, description: 'chapters of the course; list them at /courses/{courseId}/chapters' })
}, { $id: 'Course', title: 'Course', additionalProperties: false })
export type Course = Static<typeof Course>

const Position = Type.Integer({
  minimum: 1,
  maximum: OFFSET_MAX,
  description: '1-based place in the order; the others shift to make room and close the gap, so places stay 1..n. ' +
    'Past the end: the last place. Absent: the end on create, the current place on PUT'
})
const PATCH_POSITION = 'the new place (the others shift); absent keeps the place; null is 422 (every item has a place)'

export const Chapter = Type.Object({
  id: Uuid,
  course_id: Uuid,
  title: Type.String(),
  position: Type.Integer({ minimum: 1 }),
  created_at: DateTime,
  updated_at: DateTime
}, { $id: 'Chapter', title: 'Chapter', additionalProperties: false })
export type Chapter = Static<typeof Chapter>

export const ChapterCreate = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 200 }),
  position: Type.Optional(Position)
}, { $id: 'ChapterCreate', title: 'ChapterCreate', additionalProperties: false })
export type ChapterCreate = Static<typeof ChapterCreate>

export const ChapterPatch = MergePatchOf(ChapterCreate, {
  $id: 'ChapterPatch',
  title: 'ChapterPatch',
  description: 'JSON Merge Patch of ChapterCreate: a member present replaces the field (a position moves the chapter), ' +
    'an absent one is kept',
  members: { position: PATCH_POSITION }
})
export type ChapterPatch = Static<typeof ChapterPatch>

export const ChapterList = ListOf('chapters', ref(Chapter), 'ChapterList')

export const Lesson = Type.Object({
  id: Uuid,
  chapter_id: Uuid,
  title: Type.String(),
  body: Nullable(Type.String()),
  position: Type.Integer({ minimum: 1 }),
  created_at: DateTime,
  updated_at: DateTime
}, { $id: 'Lesson', title: 'Lesson', additionalProperties: false })
export type Lesson = Static<typeof Lesson>

export const LessonCreate = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 200 }),
  body: OptionalOrNull(Type.String({ maxLength: 100_000 })),
  position: Type.Optional(Position)
}, { $id: 'LessonCreate', title: 'LessonCreate', additionalProperties: false })
export type LessonCreate = Static<typeof LessonCreate>

export const LessonPatch = MergePatchOf(LessonCreate, {
  $id: 'LessonPatch',
  title: 'LessonPatch',
  description: 'JSON Merge Patch of LessonCreate: a member present replaces the field (a position moves the lesson), null clears the ' +
    'body, an absent one is kept',
  members: { position: PATCH_POSITION }
})
export type LessonPatch = Static<typeof LessonPatch>

export const LessonList = ListOf('lessons', ref(Lesson), 'LessonList')

/** Chapters and lessons keep their explicit order by default. */
export const POSITIONED_SORTABLE = ['position', 'title', 'created_at'] as const
export const PositionedListQuery = ListQuery(POSITIONED_SORTABLE, {}, 'position')
export type PositionedListQuery = Static<typeof PositionedListQuery>

export const CourseParams = Params({ courseId: Uuid })
export const ChapterParams = Params({ chapterId: Uuid })
export const CourseChapterParams = Params({ courseId: Uuid, chapterId: Uuid })
export const LessonParams = Params({ lessonId: Uuid })
