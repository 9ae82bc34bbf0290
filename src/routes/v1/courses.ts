import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdempotencyHeaders, NotModified, ref } from '../../../schemas/common.js'
import {
  Chapter, ChapterCreate, ChapterList, ChapterParams, Course, CourseChapterParams, CourseParams, Lesson, LessonCreate, LessonList, LessonParams, PositionedListQuery
} from '../../../schemas/courses.js'
import { errorResponses } from '../../../schemas/problems.js'
import {
  assertChapterOf, createChapter, createLesson, getChapter, getCourse, getLesson, listChapters, listLessons
} from '../../domain/courses.js'
import { created, listReply } from '../replies.js'
import { optionalSecurity, security, callerId, ownedByCaller } from '../guards.js'

const tags = ['courses']
const creatorOfCourse = (course: Course) => course.creator.id
// Reads are public; a sent token lets a creator see their own draft course (as on posts).
const tokenErrors = ['InvalidCredentials', 'UserIsBanned'] as const

/** Courses (COURSE posts), their chapters and lessons: public reads, the course owner writes. */
const courses: FastifyPluginAsyncTypebox = async (fastify) => {
  const { db } = fastify
  fastify.addHook('onRequest', fastify.authenticateIfToken)

  fastify.get('/courses/:courseId', {
    config: { etag: true },
    schema: { tags, operationId: 'getCourse', description: 'Anyone for a published course; with a token, its creator for a draft too. The course post with its number of chapters. Changes nothing.', security: optionalSecurity, summary: 'One course, with its number of chapters', params: CourseParams, response: { 200: ref(Course), 304: NotModified, ...errorResponses(...tokenErrors, 'ValidationFailed', 'CourseNotFound') } }
  }, async (request) => getCourse(db, request.params.courseId, callerId(request)))

  fastify.get('/courses/:courseId/chapters', {
    schema: {
      tags, operationId: 'listChapters', description: 'Anyone for a published course; with a token, its creator for a draft too. The chapters in position order. Changes nothing.', security: optionalSecurity, summary: 'Chapters of a course, in position order', params: CourseParams, querystring: PositionedListQuery,
      response: { 200: ref(ChapterList), ...errorResponses(...tokenErrors, 'ValidationFailed', 'CourseNotFound') }
    }
  }, async (request, reply) => {
    const { items, total } = await listChapters(db, request.params.courseId, callerId(request), request.query, request.query)
    return listReply(request, reply, 'chapters', items, total, request.query)
  })

  fastify.get('/chapters/:chapterId', {
    config: { etag: true },
    schema: { tags, operationId: 'getChapter', description: 'Anyone for a published course; with a token, its creator for a draft too. One chapter. Changes nothing.', security: optionalSecurity, summary: 'One chapter', params: ChapterParams, response: { 200: ref(Chapter), 304: NotModified, ...errorResponses(...tokenErrors, 'ValidationFailed', 'ChapterNotFound') } }
  }, async (request) => getChapter(db, request.params.chapterId, callerId(request)))

  fastify.get('/courses/:courseId/chapters/:chapterId/lessons', {
    schema: {
      tags, operationId: 'listLessons', description: 'Anyone for a published course; with a token, its creator for a draft too. The lessons of a chapter in position order. Changes nothing.', security: optionalSecurity, summary: 'Lessons of a chapter, in position order', params: CourseChapterParams, querystring: PositionedListQuery,
      response: { 200: ref(LessonList), ...errorResponses(...tokenErrors, 'ValidationFailed', 'CourseNotFound', 'ChapterNotFound') }
    }
  }, async (request, reply) => {
    const { courseId, chapterId } = request.params
    const { items, total } = await listLessons(db, courseId, chapterId, callerId(request), request.query, request.query)
    return listReply(request, reply, 'lessons', items, total, request.query)
  })

  fastify.get('/lessons/:lessonId', {
    config: { etag: true },
    schema: { tags, operationId: 'getLesson', description: 'Anyone for a published course; with a token, its creator for a draft too. One lesson. Changes nothing.', security: optionalSecurity, summary: 'One lesson (where a new lesson\'s Location points)', params: LessonParams, response: { 200: ref(Lesson), 304: NotModified, ...errorResponses(...tokenErrors, 'ValidationFailed', 'LessonNotFound') } }
  }, async (request) => getLesson(db, request.params.lessonId, callerId(request)))

  await fastify.register(writes)
}

const writes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)
  const { db } = fastify
  const auth = ['NotAuthenticated', 'InvalidCredentials', 'UserIsBanned', 'ValidationFailed', 'UserNotOwner', 'UserNotCreator', 'CourseNotFound', 'Conflict'] as const

  fastify.post('/courses/:courseId/chapters', {
    config: { idempotent: true },
    schema: {
      tags, security, operationId: 'createChapter', description: 'The course\'s owner only, while still a creator: adds a chapter at the given position (later chapters shift down) or at the end.', summary: 'Add a chapter at a position, or at the end (course owner)', params: CourseParams, headers: IdempotencyHeaders, body: ref(ChapterCreate),
      response: { 201: ref(Chapter), ...errorResponses(...auth) }
    }
  }, async (request, reply) => {
    await ownedByCaller(request, getCourse(db, request.params.courseId, request.user.id), creatorOfCourse, { asCreator: true })
    const chapter = await createChapter(db, request.params.courseId, request.body)
    return created(reply, `/v1/chapters/${chapter.id}`, chapter)
  })

  fastify.post('/courses/:courseId/chapters/:chapterId/lessons', {
    config: { idempotent: true },
    schema: {
      tags, security, operationId: 'createLesson', description: 'The course\'s owner only, while still a creator: adds a lesson to a chapter at the given position (later lessons shift down) or at the end.', summary: 'Add a lesson at a position, or at the end (course owner)', params: CourseChapterParams, headers: IdempotencyHeaders, body: ref(LessonCreate),
      response: { 201: ref(Lesson), ...errorResponses(...auth, 'ChapterNotFound') }
    }
  }, async (request, reply) => {
    const { courseId, chapterId } = request.params
    await ownedByCaller(request, getCourse(db, courseId, request.user.id), creatorOfCourse, { asCreator: true })
    await assertChapterOf(db, courseId, chapterId)
    const lesson = await createLesson(db, chapterId, request.body)
    return created(reply, `/v1/lessons/${lesson.id}`, lesson)
  })
}

export default courses
