import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { assertOwner } from '../../domain/people.js'
import {
  Class, ClassCreate, ClassList, ClassListQuery, ClassParams, Student, StudentCreate, StudentList, StudentListQuery, StudentParams
} from '../../../schemas/classes.js'
import { IdempotencyHeaders, NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { createClass, createStudent, getClass, getStudent, listClasses, listStudents } from '../../domain/classes.js'
import { pageOrCount } from '../../domain/list.js'
import { created, listReply } from '../http.js'
import { security } from '../guards.js'

const tags = ['classes']

/**
 * Classes are read by any signed-in user and opened by creators; students are personal data:
 * only the class owner reads or adds them (403 UserNotOwner for anyone else).
 */
const classes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)
  const { db } = fastify
  const auth = ['NotAuthenticated', 'InvalidCredentials', 'UserIsBanned', 'ValidationFailed'] as const

  fastify.get('/classes', {
    schema: { tags, security, operationId: 'listClasses', summary: 'All classes', querystring: ClassListQuery, response: { 200: ref(ClassList), ...errorResponses(...auth) } }
  }, async (request, reply) => {
    const { items, total } = await listClasses(db, request.query, request.query)
    return listReply(request, reply, 'classes', items, total, request.query)
  })

  fastify.post('/classes', {
    config: { idempotent: true },
    preHandler: fastify.requireCreator,
    schema: {
      tags, security, operationId: 'createClass', summary: 'Open a class, optionally for one of your courses (creators)', headers: IdempotencyHeaders, body: ref(ClassCreate),
      response: { 201: ref(Class), ...errorResponses(...auth, 'UserNotCreator', 'UserNotOwner', 'Conflict') }
    }
  }, async (request, reply) => {
    const cls = await createClass(db, request.user.id, request.body)
    return created(reply, `/v1/classes/${cls.id}`, cls)
  })

  fastify.get('/classes/:classId', {
    config: { etag: true },
    schema: { tags, security, operationId: 'getClass', summary: 'One class', params: ClassParams, response: { 200: ref(Class), 304: NotModified, ...errorResponses(...auth, 'ClassNotFound') } }
  }, async (request) => getClass(db, request.params.classId))

  fastify.get('/classes/:classId/students', {
    schema: {
      tags, security, operationId: 'listStudents', summary: 'Students of a class (owner); filter sex; limit/offset or page/count', params: ClassParams, querystring: StudentListQuery,
      response: { 200: ref(StudentList), ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound') }
    }
  }, async (request, reply) => {
    const page = pageOrCount(request.query)
    assertOwner(request.user.id, (await getClass(db, request.params.classId)).owner.id)
    const { items, total } = await listStudents(db, request.params.classId, request.query, page)
    return listReply(request, reply, 'students', items, total, page)
  })

  fastify.post('/classes/:classId/students', {
    config: { idempotent: true },
    schema: {
      tags, security, operationId: 'createStudent', summary: 'Add a student to a class (owner)', params: ClassParams, headers: IdempotencyHeaders, body: ref(StudentCreate),
      response: { 201: ref(Student), ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound', 'Conflict') }
    }
  }, async (request, reply) => {
    assertOwner(request.user.id, (await getClass(db, request.params.classId)).owner.id)
    const student = await createStudent(db, request.params.classId, request.body)
    return created(reply, `/v1/classes/${student.class_id}/students/${student.id}`, student)
  })

  fastify.get('/classes/:classId/students/:studentId', {
    config: { etag: true },
    schema: {
      tags, security, operationId: 'getStudent', summary: 'One student of a class (owner)', params: StudentParams,
      response: { 200: ref(Student), 304: NotModified, ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound', 'StudentNotFound') }
    }
  }, async (request) => {
    assertOwner(request.user.id, (await getClass(db, request.params.classId)).owner.id)
    return getStudent(db, request.params.classId, request.params.studentId)
  })
}

export default classes
