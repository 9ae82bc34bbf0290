import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  Class, ClassCreate, ClassList, ClassListQuery, ClassParams, ClassPatch, Student, StudentCreate, StudentList, StudentListQuery,
  StudentParams, StudentPatch
} from '../../../schemas/classes.js'
import { IdempotencyHeaders, IfMatchHeaders, NoContent, NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import {
  classFields, createClass, createStudent, deleteClass, deleteStudent, getClass, getStudent, listClasses, listStudents, studentFields,
  updateClass, updateStudent
} from '../../domain/classes.js'
import { pageOrCount } from '../../domain/list.js'
import { created, listReply } from '../replies.js'
import { authErrors, security } from '../guards.js'
import { registerUpdates } from '../updates.js'

const tags = ['classes']
const ownClass = { of: (cls: Class) => cls.owner.id }

/**
 * Classes are read by any signed-in user (those of a course not out yet by its creator only) and
 * opened by creators; students are personal data: only the class owner reads or adds them (403
 * UserNotOwner for anyone else who can see the class, 404 for anyone who cannot).
 */
const classes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)
  const { db } = fastify
  const auth = [...authErrors, 'ValidationFailed'] as const

  fastify.get('/classes', {
    schema: {
      tags,
      security,
      operationId: 'listClasses',
      summary: 'All classes',
      querystring: ClassListQuery,
      response: { 200: ref(ClassList), ...errorResponses(...auth) }
    }
  }, async (request, reply) => {
    const { items, total } = await listClasses(db, request.user.id, request.query, request.query)
    return listReply(request, reply, 'classes', items, total, request.query)
  })

  fastify.post('/classes', {
    config: { idempotent: true },
    onRequest: fastify.requireCreator,
    schema: {
      tags,
      security,
      operationId: 'createClass',
      summary: 'Open a class, optionally for one of your courses (creators)',
      headers: IdempotencyHeaders,
      body: ref(ClassCreate),
      response: { 201: ref(Class), ...errorResponses(...auth, 'UserNotCreator', 'UserNotOwner', 'Conflict') }
    }
  }, async (request, reply) => {
    const cls = await createClass(db, request.user.id, request.body)
    return created(reply, `/v1/classes/${cls.id}`, cls)
  })

  fastify.get('/classes/:classId', {
    config: { etag: true },
    schema: {
      tags,
      security,
      operationId: 'getClass',
      summary: 'One class',
      params: ClassParams,
      response: { 200: ref(Class), 304: NotModified, ...errorResponses(...auth, 'ClassNotFound') }
    }
  }, async (request) => getClass(db, request.params.classId, request.user.id))

  fastify.get('/classes/:classId/students', {
    config: { owner: ownClass },
    schema: {
      tags,
      security,
      operationId: 'listStudents',
      summary: 'Students of a class (owner); filter sex; limit/offset or page/count',
      params: ClassParams,
      querystring: StudentListQuery,
      response: { 200: ref(StudentList), ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound') }
    }
  }, async (request, reply) => {
    const page = pageOrCount(request.query)
    request.owned(await getClass(db, request.params.classId, request.user.id))
    const { items, total } = await listStudents(db, request.params.classId, request.query, page)
    return listReply(request, reply, 'students', items, total, page)
  })

  fastify.post('/classes/:classId/students', {
    config: { idempotent: true, owner: { ...ownClass, creator: true } },
    schema: {
      tags,
      security,
      operationId: 'createStudent',
      summary: 'Add a student to a class (owner)',
      params: ClassParams,
      headers: IdempotencyHeaders,
      body: ref(StudentCreate),
      response: { 201: ref(Student), ...errorResponses(...auth, 'UserNotOwner', 'UserNotCreator', 'ClassNotFound', 'Conflict') }
    }
  }, async (request, reply) => {
    request.owned(await getClass(db, request.params.classId, request.user.id))
    const student = await createStudent(db, request.params.classId, request.body)
    return created(reply, `/v1/classes/${student.class_id}/students/${student.id}`, student)
  })

  fastify.get('/classes/:classId/students/:studentId', {
    config: { etag: true, owner: ownClass },
    schema: {
      tags,
      security,
      operationId: 'getStudent',
      summary: 'One student of a class (owner)',
      params: StudentParams,
      response: { 200: ref(Student), 304: NotModified, ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound', 'StudentNotFound') }
    }
  }, async (request) => {
    request.owned(await getClass(db, request.params.classId, request.user.id))
    return getStudent(db, request.params.classId, request.params.studentId)
  })

  await fastify.register(ownerWrites)
}

/** The class owner's changes: a class and its students replaced, patched or removed. */
const ownerWrites: FastifyPluginAsyncTypebox = async (fastify) => {
  const { db } = fastify
  // changing a class or a student needs creator rights still, removing one only ownership
  const ownStudent = { of: ({ cls }: { cls: Class }) => cls.owner.id, item: ({ student }: { student: Student }) => student }
  const auth = [...authErrors, 'ValidationFailed'] as const

  registerUpdates(fastify, {
    url: '/classes/:classId',
    tags,
    params: ClassParams,
    body: ClassCreate,
    patchBody: ClassPatch,
    response: Class,
    errors: [...auth, 'UserNotOwner', 'UserNotCreator', 'ClassNotFound', 'PreconditionFailed'],
    put: {
      operationId: 'updateClass',
      summary: 'Replace a class\'s writable fields (owner)'
    },
    patch: {
      operationId: 'patchClass',
      summary: 'Change some fields of a class (owner), a JSON Merge Patch'
    },
    fieldsOf: classFields,
    owner: { ...ownClass, creator: true },
    run: (request, _reply, change) => updateClass(db, request.params.classId, request.user.id, change, request.owned)
  })

  fastify.delete('/classes/:classId', {
    config: { owner: ownClass },
    schema: {
      tags,
      security,
      operationId: 'deleteClass',
      summary: 'Close a class and remove its students (owner)',
      params: ClassParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound', 'PreconditionFailed') }
    }
  }, async (request, reply) => {
    await deleteClass(db, request.params.classId, request.user.id, request.owned)
    return reply.code(204).send(null)
  })

  registerUpdates(fastify, {
    url: '/classes/:classId/students/:studentId',
    tags,
    params: StudentParams,
    body: StudentCreate,
    patchBody: StudentPatch,
    response: Student,
    errors: [...auth, 'UserNotOwner', 'UserNotCreator', 'ClassNotFound', 'StudentNotFound', 'PreconditionFailed'],
    put: {
      operationId: 'updateStudent',
      summary: 'Replace a student\'s writable fields (class owner)'
    },
    patch: {
      operationId: 'patchStudent',
      summary: 'Change some fields of a student (class owner), a JSON Merge Patch'
    },
    fieldsOf: studentFields,
    owner: { ...ownStudent, creator: true },
    run: (request, _reply, change) => updateStudent(db, request.params.classId, request.params.studentId, request.user.id, change, request.owned)
  })

  fastify.delete('/classes/:classId/students/:studentId', {
    config: { owner: ownStudent },
    schema: {
      tags,
      security,
      operationId: 'deleteStudent',
      summary: 'Remove a student from a class (class owner)',
      params: StudentParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...auth, 'UserNotOwner', 'ClassNotFound', 'StudentNotFound', 'PreconditionFailed') }
    }
  }, async (request, reply) => {
    await deleteStudent(db, request.params.classId, request.params.studentId, request.user.id, request.owned)
    return reply.code(204).send(null)
  })
}

export default classes
