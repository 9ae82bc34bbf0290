import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdempotencyHeaders, IfMatchHeaders, NoContent, NotModified, ref } from '../../../schemas/common.js'
import {
  Chapter, ChapterCreate, ChapterList, ChapterParams, ChapterPatch, Course, CourseChapterParams, CourseParams, Lesson, LessonCreate,
  LessonList, LessonParams, LessonPatch, PositionedListQuery
} from '../../../schemas/courses.js'
import { errorResponses } from '../../../schemas/problems.js'
import {
  assertChapterOf, chapterFields, createChapter, createLesson, deleteChapter, deleteLesson, getChapter, getCourse, getLesson, lessonFields,
  listChapters, listLessons, updateChapter, updateLesson, type CourseOwner
} from '../../domain/courses.js'
import { created, listReply } from '../replies.js'
import { authErrors, optionalSecurity, security, callerId } from '../guards.js'
import { registerUpdates } from '../updates.js'

const tags = ['courses']
// the course's creator adds to it while still a creator; changing a chapter or lesson needs creator rights still, removing one only ownership
const ownCourse = { of: (course: Course) => course.creator.id, creator: true }
const ownChapter = { of: ({ course }: { course: CourseOwner }) => course.creator.id, item: ({ chapter }: { chapter: Chapter }) => chapter }
const ownLesson = { of: ({ course }: { course: CourseOwner }) => course.creator.id, item: ({ lesson }: { lesson: Lesson }) => lesson }
// Reads are public; a sent token lets a creator see their own draft course (as on posts).
const tokenErrors = ['InvalidCredentials', 'UserIsBanned'] as const

/**
 * Courses (COURSE posts), their chapters and lessons: public reads, the course owner writes. Two
 * sibling plugins, each with its own authentication hook, so a write reads the account once.
 */
const courses: FastifyPluginAsyncTypebox = async (fastify) => {
  await fastify.register(reads)
  await fastify.register(writes)
}

const reads: FastifyPluginAsyncTypebox = async (fastify) => {
  const { db } = fastify
  fastify.addHook('onRequest', fastify.authenticateIfToken)

  fastify.get('/courses/:courseId', {
    config: { etag: true },
    schema: {
      tags,
      operationId: 'getCourse',
      security: optionalSecurity,
      summary: 'One course, with its number of chapters',
      params: CourseParams,
      response: { 200: ref(Course), 304: NotModified, ...errorResponses(...tokenErrors, 'ValidationFailed', 'CourseNotFound') }
    }
  }, async (request) => getCourse(db, request.params.courseId, callerId(request)))

  fastify.get('/courses/:courseId/chapters', {
    schema: {
      tags,
      operationId: 'listChapters',
      security: optionalSecurity,
      summary: 'Chapters of a course, in position order',
      params: CourseParams,
      querystring: PositionedListQuery,
      response: { 200: ref(ChapterList), ...errorResponses(...tokenErrors, 'ValidationFailed', 'CourseNotFound') }
    }
  }, async (request, reply) => {
    const { items, total } = await listChapters(db, request.params.courseId, callerId(request), request.query, request.query)
    return listReply(request, reply, 'chapters', items, total, request.query)
  })

  fastify.get('/chapters/:chapterId', {
    config: { etag: true },
    schema: {
      tags,
      operationId: 'getChapter',
      security: optionalSecurity,
      summary: 'One chapter',
      params: ChapterParams,
      response: { 200: ref(Chapter), 304: NotModified, ...errorResponses(...tokenErrors, 'ValidationFailed', 'ChapterNotFound') }
    }
  }, async (request) => getChapter(db, request.params.chapterId, callerId(request)))

  fastify.get('/courses/:courseId/chapters/:chapterId/lessons', {
    schema: {
      tags,
      operationId: 'listLessons',
      security: optionalSecurity,
      summary: 'Lessons of a chapter, in position order',
      params: CourseChapterParams,
      querystring: PositionedListQuery,
      response: { 200: ref(LessonList), ...errorResponses(...tokenErrors, 'ValidationFailed', 'CourseNotFound', 'ChapterNotFound') }
    }
  }, async (request, reply) => {
    const { courseId, chapterId } = request.params
    const { items, total } = await listLessons(db, courseId, chapterId, callerId(request), request.query, request.query)
    return listReply(request, reply, 'lessons', items, total, request.query)
  })

  fastify.get('/lessons/:lessonId', {
    config: { etag: true },
    schema: {
      tags,
      operationId: 'getLesson',
      security: optionalSecurity,
      summary: 'One lesson (where a new lesson\'s Location points)',
      params: LessonParams,
      response: { 200: ref(Lesson), 304: NotModified, ...errorResponses(...tokenErrors, 'ValidationFailed', 'LessonNotFound') }
    }
  }, async (request) => getLesson(db, request.params.lessonId, callerId(request)))
}

const writes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)
  const { db } = fastify
  const auth = [...authErrors, 'ValidationFailed', 'UserNotOwner', 'UserNotCreator', 'CourseNotFound', 'Conflict'] as const

  fastify.post('/courses/:courseId/chapters', {
    config: { idempotent: true, owner: ownCourse },
    schema: {
      tags,
      security,
      operationId: 'createChapter',
      summary: 'Add a chapter at a position, or at the end (course owner)',
      params: CourseParams,
      headers: IdempotencyHeaders,
      body: ref(ChapterCreate),
      response: { 201: ref(Chapter), ...errorResponses(...auth) }
    }
  }, async (request, reply) => {
    request.owned(await getCourse(db, request.params.courseId, request.user.id))
    const chapter = await createChapter(db, request.params.courseId, request.body)
    return created(reply, `/v1/chapters/${chapter.id}`, chapter)
  })

  fastify.post('/courses/:courseId/chapters/:chapterId/lessons', {
    config: { idempotent: true, owner: ownCourse },
    schema: {
      tags,
      security,
      operationId: 'createLesson',
      summary: 'Add a lesson at a position, or at the end (course owner)',
      params: CourseChapterParams,
      headers: IdempotencyHeaders,
      body: ref(LessonCreate),
      response: { 201: ref(Lesson), ...errorResponses(...auth, 'ChapterNotFound') }
    }
  }, async (request, reply) => {
    const { courseId, chapterId } = request.params
    request.owned(await getCourse(db, courseId, request.user.id))
    await assertChapterOf(db, courseId, chapterId)
    const lesson = await createLesson(db, chapterId, request.body)
    return created(reply, `/v1/lessons/${lesson.id}`, lesson)
  })

  const changes = [...authErrors, 'ValidationFailed', 'UserNotOwner', 'PreconditionFailed'] as const

  registerUpdates(fastify, {
    url: '/chapters/:chapterId',
    tags,
    params: ChapterParams,
    body: ChapterCreate,
    patchBody: ChapterPatch,
    response: Chapter,
    errors: [...changes, 'UserNotCreator', 'ChapterNotFound'],
    put: {
      operationId: 'updateChapter',
      summary: 'Replace a chapter\'s title, or move it (course owner)'
    },
    patch: {
      operationId: 'patchChapter',
      summary: 'Rename or move a chapter (course owner), a JSON Merge Patch'
    },
    fieldsOf: chapterFields,
    owner: { ...ownChapter, creator: true },
    run: (request, _reply, change) => updateChapter(db, request.params.chapterId, request.user.id, change, request.owned)
  })

  fastify.delete('/chapters/:chapterId', {
    config: { owner: ownChapter },
    schema: {
      tags,
      security,
      operationId: 'deleteChapter',
      summary: 'Remove a chapter and its lessons (course owner)',
      params: ChapterParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...changes, 'ChapterNotFound') }
    }
  }, async (request, reply) => {
    await deleteChapter(db, request.params.chapterId, request.user.id, request.owned)
    return reply.code(204).send(null)
  })

  registerUpdates(fastify, {
    url: '/lessons/:lessonId',
    tags,
    params: LessonParams,
    body: LessonCreate,
    patchBody: LessonPatch,
    response: Lesson,
    errors: [...changes, 'UserNotCreator', 'LessonNotFound'],
    put: {
      operationId: 'updateLesson',
      summary: 'Replace a lesson\'s title and body, or move it (course owner)'
    },
    patch: {
      operationId: 'patchLesson',
      summary: 'Change or move a lesson (course owner), a JSON Merge Patch'
    },
    fieldsOf: lessonFields,
    owner: { ...ownLesson, creator: true },
    run: (request, _reply, change) => updateLesson(db, request.params.lessonId, request.user.id, change, request.owned)
  })

  fastify.delete('/lessons/:lessonId', {
    config: { owner: ownLesson },
    schema: {
      tags,
      security,
      operationId: 'deleteLesson',
      summary: 'Remove a lesson (course owner)',
      params: LessonParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...changes, 'LessonNotFound') }
    }
  }, async (request, reply) => {
    await deleteLesson(db, request.params.lessonId, request.user.id, request.owned)
    return reply.code(204).send(null)
  })
}

export default courses
