import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdempotencyHeaders, IfMatchHeaders, NoContent, NotModified, ref } from '../../../schemas/common.js'
import {
  Chapter, ChapterCreate, ChapterList, ChapterParams, ChapterPatch, Course, CourseChapterParams, CourseParams, Lesson, LessonCreate,
  LessonList, LessonParams, LessonPatch, PositionedListQuery
} from '../../../schemas/courses.js'
import { errorResponses } from '../../../schemas/problems.js'
import {
  assertChapterOf, chapterFields, createChapter, createLesson, deleteChapter, deleteLesson, getChapter, getCourse, getLesson, lessonFields,
  listChapters, listLessons, updateChapter, updateLesson
} from '../../domain/courses.js'
import { created, listReply } from '../replies.js'
import { authErrors, optionalSecurity, security, callerId } from '../guards.js'
import { registerUpdates } from '../updates.js'

const tags = ['courses']
// the course's creator adds to it while still a creator; changing a chapter or lesson needs creator rights still, removing one only ownership
const ownCourse = { of: (course: Course) => course.creator.id, creator: true }
const ownChapter = { of: ({ course }: { course: Course }) => course.creator.id, item: ({ chapter }: { chapter: Chapter }) => chapter }
const ownLesson = { of: ({ course }: { course: Course }) => course.creator.id, item: ({ lesson }: { lesson: Lesson }) => lesson }
// Reads are public; a sent token lets a creator see their own draft course (as on posts).
const tokenErrors = ['InvalidCredentials', 'UserIsBanned'] as const

/** Courses (COURSE posts), their chapters and lessons: public reads, the course owner writes. */
const courses: FastifyPluginAsyncTypebox = async (fastify) => {
  const { db } = fastify
  fastify.addHook('onRequest', fastify.authenticateIfToken)

  fastify.get('/courses/:courseId', {
    config: { etag: true },
    schema: {
      tags,
      operationId: 'getCourse',
      description: 'Anyone for a published course; with a token, its creator for a draft too. ' +
      'The course post with its number of chapters. Changes nothing.',
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
      description: 'Anyone for a published course; with a token, its creator for a draft too. The chapters in position order. Changes nothing.',
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
      description: 'Anyone for a published course; with a token, its creator for a draft too. ' +
      'One chapter. Changes nothing.',
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
      description: 'Anyone for a published course; with a token, its creator for a draft too. The lessons of a chapter in position order. Changes nothing.',
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
      description: 'Anyone for a published course; with a token, its creator for a draft too. ' +
      'One lesson. Changes nothing.',
      security: optionalSecurity,
      summary: 'One lesson (where a new lesson\'s Location points)',
      params: LessonParams,
      response: { 200: ref(Lesson), 304: NotModified, ...errorResponses(...tokenErrors, 'ValidationFailed', 'LessonNotFound') }
    }
  }, async (request) => getLesson(db, request.params.lessonId, callerId(request)))

  await fastify.register(writes)
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
      description: 'The course\'s owner only, while still a creator: adds a chapter at the given position (later chapters shift down) or at the end.',
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
      description: 'The course\'s owner only, while still a creator: adds a lesson to a chapter at the given position (later lessons ' +
        'shift down) or at the end.',
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
      description: 'The course\'s owner only, while still a creator (others 403; 404 where the course is hidden from the caller): ' +
        'replaces the title and, with a position, moves the chapter there (the chapters between shift by one; past the end: last; ' +
        'absent: it stays). A stale If-Match is 412 and changes nothing.',
      summary: 'Replace a chapter\'s title, or move it (course owner)'
    },
    patch: {
      operationId: 'patchChapter',
      description: 'The course\'s owner only, while still a creator: merges a JSON Merge Patch (RFC 7396): a title present replaces ' +
        'the title, a position moves the chapter (the chapters between shift by one), an absent member is kept; null is 422 on both. A ' +
        'stale If-Match is 412 and changes nothing.',
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
      description: 'The course\'s owner only (others 403; 404 where the course is hidden from the caller): removes the chapter and its ' +
        'lessons in the same change; the later chapters move up one place. A stale If-Match is 412 and removes nothing; a second ' +
        'DELETE is 404.',
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
      description: 'The course\'s owner only, while still a creator (others 403; 404 where the course is hidden from the caller): ' +
        'replaces the title and body (absent body: none) and, with a position, moves the lesson within its chapter (the lessons ' +
        'between shift by one; past the end: last; absent: it stays). A stale If-Match is 412 and changes nothing.',
      summary: 'Replace a lesson\'s title and body, or move it (course owner)'
    },
    patch: {
      operationId: 'patchLesson',
      description: 'The course\'s owner only, while still a creator: merges a JSON Merge Patch (RFC 7396): a member present replaces ' +
        'the field, a position moves the lesson within its chapter, null clears the body (on the title or position it is 422), an ' +
        'absent member is kept. A stale If-Match is 412 and changes nothing.',
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
      description: 'The course\'s owner only (others 403; 404 where the course is hidden from the caller): removes the lesson; the later ' +
        'lessons of its chapter move up one place. A stale If-Match is 412 and removes nothing; a second DELETE is 404.',
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
