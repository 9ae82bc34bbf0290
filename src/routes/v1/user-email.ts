import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { QueuedStatus, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { authErrors, security } from '../guards.js'
import { UserParams } from '../../../schemas/user-email.js'
import { queueAccountSummary } from '../../domain/account-email.js'

/** POST /users/{userId}/email: queues your account summary e-mail; self only. */
const userEmail: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)

  fastify.post('/users/:userId/email', {
    config: { owner: { param: 'userId' } },
    preHandler: fastify.mailRateLimit,
    schema: {
      tags: ['users'],
      operationId: 'sendAccountSummary',
      summary: 'E-mail yourself your account summary',
      security,
      params: UserParams,
      response: { 202: ref(QueuedStatus), ...errorResponses(...authErrors, 'UserNotOwner', 'EmailNotVerified', 'ValidationFailed') }
    }
  }, async (request, reply) => {
    await queueAccountSummary(fastify.db, request.user.id)
    return reply.code(202).send({ status: 'queued' as const })
  })
}

export default userEmail
