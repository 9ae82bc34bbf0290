import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  Class, ClassCreate, ClassList, ClassListQuery, ClassParams, Student, StudentCreate, StudentList, StudentListQuery, StudentParams
} from '../../../schemas/classes.js'
import { IdempotencyHeaders, NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { createClass, createStudent, getClass, getStudent, listClasses, listStudents } from '../../domain/classes.js'
import { pageOrCount } from '../../domain/list.js'
import { created, listReply } from '../replies.js'
import { ownedByCaller, security } from '../guards.js'

const tags = ['classes']
const ownerOfClass = (cls: Class) => cls.owner.id

/**
 * Classes are read by any signed-in user (those of a course not out yet by its creator only) and
 * opened by creators; students are personal data: only the class owner reads or adds them (403
 * UserNotOwner for anyone else who can see the class, 404 for anyone who cannot).
 */
const classes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)
  const { db } = fastify
  const auth = ['NotAuthenticated', 'InvalidCredentials', 'UserIsBanned', 'ValidationFailed'] as const

  fastify.get('/classes', {
    schema: { tags, security, operationId: 'listClasses', description: 'Any signed-in active user: every class the caller may see, filtered by owner or course. The classes of a draft or scheduled course are listed to the course\'s creator only (for anyone else they are as absent as those of a missing course). Changes nothing.', summary: 'All classes', querystring: ClassListQuery, response: { 200: ref(ClassList), ...errorResponses(...auth) } }
  }, async (request, reply) => {
    const { items, total } = await listClasses(db, request.user.id, request.query, request.query)
    return listReply(request, reply, 'classes', items, total, request.query)
  })

  fastify.post('/classes', {
    config: { idempotent: true },
    onRequest: fastify.requireCreator,
    schema: {
      tags, security, operationId: 'createClass', description: 'Active creators: opens a class, optionally for one of the caller\'s own COURSE posts (another creator\'s published course is 403; an article, a missing course or another creator\'s draft or scheduled course 422, alike). The caller owns the class.', summary: 'Open a class, optionally for one of your courses (creators)', headers: IdempotencyHeaders, body: ref(ClassCreate),
      response: { 201: ref(Class), ...errorResponses(...auth, 'UserNotCreator', 'UserNotOwner', 'Conflict') }
    }
  }, async (request, reply) => {
    const cls = await createClass(db, request.user.id, request.body)
    return created(reply, `/v1/classes/${cls.id}`, cls)
  })

  fastify.get('/classes/:classId', {
    config: { etag: true },
    schema: { tags, security, operationId: 'getClass', description: 'Any signed-in active user: one class; a class of a draft or scheduled course only to the course\'s creator (anyone else 404, as for a missing class). Changes nothing.', summary: 'One class', params: ClassParams, response: { 200: ref(Class), 304: NotModified, ...errorResponses(...auth, 'ClassNotFound') } }
  }, async (request) => getClass(db, request.params.classId, request.user.id))

  fastify.get('/classes/:classId/students', {
    schema: {
      tags, security, operationId: 'listStudents', description: 'The class owner only (others 403; 404 for a class the caller cannot see): the students of a class, paged by limit/offset or by page/count (not both). Changes nothing.', summary: 'Students of a class (owner); filter sex; limit/offset or page/count', params: ClassParams, querystring: StudentListQuery,
      response: { 200: ref(StudentList), ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound') }
    }
  }, async (request, reply) => {
    const page = pageOrCount(request.query)
    await ownedByCaller(request, getClass(db, request.params.classId, request.user.id), ownerOfClass)
    const { items, total } = await listStudents(db, request.params.classId, request.query, page)
    return listReply(request, reply, 'students', items, total, page)
  })

  fastify.post('/classes/:classId/students', {
    config: { idempotent: true },
    schema: {
      tags, security, operationId: 'createStudent', description: 'The class owner only, while still a creator (others 403; 404 for a class the caller cannot see): adds a student to the class.', summary: 'Add a student to a class (owner)', params: ClassParams, headers: IdempotencyHeaders, body: ref(StudentCreate),
      response: { 201: ref(Student), ...errorResponses(...auth, 'UserNotOwner', 'UserNotCreator', 'ClassNotFound', 'Conflict') }
    }
  }, async (request, reply) => {
    await ownedByCaller(request, getClass(db, request.params.classId, request.user.id), ownerOfClass, { asCreator: true })
    const student = await createStudent(db, request.params.classId, request.body)
    return created(reply, `/v1/classes/${student.class_id}/students/${student.id}`, student)
  })

  fastify.get('/classes/:classId/students/:studentId', {
    config: { etag: true },
    schema: {
      tags, security, operationId: 'getStudent', description: 'The class owner only (others 403; 404 for a class the caller cannot see): one student of the class. Changes nothing.', summary: 'One student of a class (owner)', params: StudentParams,
      response: { 200: ref(Student), 304: NotModified, ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound', 'StudentNotFound') }
    }
  }, async (request) => {
    await ownedByCaller(request, getClass(db, request.params.classId, request.user.id), ownerOfClass)
    return getStudent(db, request.params.classId, request.params.studentId)
  })
}

export default classes
