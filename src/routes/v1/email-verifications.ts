import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../schemas/typebox.js'
import { QueuedStatus, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { EmailVerification, UserParams } from '../../../schemas/user-email.js'
import { confirmEmail, resendVerification } from '../../domain/email-verification.js'
import { authErrors, publicBodyLimit, security } from '../guards.js'

const tags = ['users']
const Verified = Type.Null({ description: 'No Content: the address is verified' })

/**
 * E-mail verification: confirming a mailed link (public: whoever holds the link), and asking for
 * a new link (the signed-in user, self only, under the mail limits).
 */
const emailVerifications: FastifyPluginAsyncTypebox = async (fastify) => {
  // A POST, not a GET on the link itself: mail scanners and previews follow links, and must not verify.
  fastify.post('/email-verifications', {
    bodyLimit: publicBodyLimit(fastify.config),
    schema: {
      tags,
      operationId: 'confirmEmail',
      summary: 'Verify an e-mail address with the token from its link',
      body: ref(EmailVerification),
      response: { 204: Verified, ...errorResponses('ValidationFailed', 'InvalidVerificationToken') }
    }
  }, async (request, reply) => {
    await confirmEmail(fastify.db, fastify.emailVerification, request.body.token)
    return reply.code(204).send(null)
  })

  await fastify.register(resend)
}

const resend: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)

  fastify.post('/users/:userId/verification-emails', {
    // self first (UserNotOwner), then the mail limits every mail-sending route shares
    config: { owner: { param: 'userId' } },
    preHandler: fastify.mailRateLimit,
    schema: {
      tags,
      security,
      operationId: 'sendVerificationEmail',
      summary: 'E-mail yourself a new verification link',
      params: UserParams,
      response: { 202: ref(QueuedStatus), ...errorResponses(...authErrors, 'UserNotOwner', 'EmailAlreadyVerified', 'ValidationFailed') }
    }
  }, async (request, reply) => {
    await resendVerification(fastify.db, fastify.emailVerification, request.user.id)
    return reply.code(202).send({ status: 'queued' as const })
  })
}

export default emailVerifications
