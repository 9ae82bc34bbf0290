import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from '../../../schemas/typebox.js'
import { AccountDeletion, EmailChange, PasswordChange, PasswordResetConfirmation, PasswordResetRequest } from '../../../schemas/account.js'
import { TokenResponse } from '../../../schemas/auth.js'
import { QueuedStatus, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { changePassword, deleteAccount, endAllTokens, requestEmailChange } from '../../domain/account.js'
import { requestPasswordReset, resetPassword, resetSettings } from '../../domain/password-reset.js'
import { normaliseUsername } from '../../domain/users.js'
import { authErrors, publicBodyLimit, security } from '../guards.js'

const tags = ['account']
const NoContent = (description: string) => Type.Null({ description })

/** What a reset request names, as the limits count it: the address, or the username. */
function namedIn (request: FastifyRequest): string {
  const body = request.body as { email?: string, username?: string }
  return body.email !== undefined ? `email:${body.email.trim().toLowerCase()}` : `username:${normaliseUsername(body.username ?? '')}`
}

/**
 * The account routes (DESIGN.md §7): forgotten passwords (public), and the caller's own password,
 * address, tokens and account (signed in). The rules are in src/domain/account.ts and password-reset.ts.
 */
const account: FastifyPluginAsyncTypebox = async (fastify) => {
  const { config } = fastify
  const reset = resetSettings(config.jwtSecret, config.passwordResetUrl)

  fastify.post('/password-resets', {
    bodyLimit: publicBodyLimit(config),
    preHandler: fastify.namedRecipientRateLimit(namedIn),
    schema: {
      tags,
      operationId: 'requestPasswordReset',
      summary: 'Ask for a password-reset link by e-mail',
      body: ref(PasswordResetRequest),
      response: { 202: ref(QueuedStatus), ...errorResponses('ValidationFailed', 'RateLimited') }
    }
  }, async (request, reply) => {
    await requestPasswordReset(fastify.db, reset, request.body, config.PASSWORD_HASH_COST)
    return reply.code(202).send({ status: 'queued' as const })
  })

  fastify.post('/password-resets/confirmations', {
    bodyLimit: publicBodyLimit(config),
    schema: {
      tags,
      operationId: 'confirmPasswordReset',
      summary: 'Set a new password with the token from a reset link',
      body: ref(PasswordResetConfirmation),
      response: { 204: NoContent('No Content: the new password is set'), ...errorResponses('ValidationFailed', 'InvalidResetToken') }
    }
  }, async (request, reply) => {
    await resetPassword(fastify.db, reset, request.body.token, request.body.new_password, config.PASSWORD_HASH_COST)
    return reply.code(204).send(null)
  })

  await fastify.register(me)
}

const me: FastifyPluginAsyncTypebox = async (fastify) => {
  const { config } = fastify
  fastify.addHook('onRequest', fastify.authenticate)
  const wrongPassword = ['WrongPassword', 'ValidationFailed'] as const
  // each attempt at the current password counts toward the caller's sign-in limit (POST /auth/token)
  const attempt = fastify.passwordAttempt(request => request.user.username)

  fastify.put('/profiles/me/password', {
    preHandler: attempt,
    schema: {
      tags,
      security,
      operationId: 'changeMyPassword',
      summary: 'Change the caller\'s password',
      body: ref(PasswordChange),
      response: { 200: ref(TokenResponse), ...errorResponses(...authErrors, ...wrongPassword, 'RateLimited') }
    }
  }, async (request, reply) => {
    const generation = await changePassword(fastify.db, request.user.id, request.body, config.PASSWORD_HASH_COST)
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
      .send(fastify.issueToken({ id: request.user.id, generation }))
  })

  fastify.post('/profiles/me/email-changes', {
    preHandler: [attempt, fastify.mailRateLimit],
    schema: {
      tags,
      security,
      operationId: 'changeMyEmail',
      summary: 'Ask to move the account to another e-mail address',
      body: ref(EmailChange),
      response: { 202: ref(QueuedStatus), ...errorResponses(...authErrors, ...wrongPassword, 'InvalidUserData', 'RateLimited') }
    }
  }, async (request, reply) => {
    await requestEmailChange(fastify.db, fastify.emailVerification, request.user.id, request.body, config.PASSWORD_HASH_COST)
    return reply.code(202).send({ status: 'queued' as const })
  })

  fastify.delete('/profiles/me/tokens', {
    schema: {
      tags,
      security,
      operationId: 'deleteMyTokens',
      summary: 'Sign out everywhere: end every token of the caller\'s account',
      response: { 204: NoContent('No Content: every token of the account has ended'), ...errorResponses(...authErrors) }
    }
  }, async (request, reply) => {
    await endAllTokens(fastify.db, request.user.id)
    return reply.code(204).send(null)
  })

  fastify.delete('/profiles/me', {
    preHandler: attempt,
    schema: {
      tags,
      security,
      operationId: 'deleteMyAccount',
      summary: 'Delete the caller\'s account and everything that is theirs',
      body: ref(AccountDeletion),
      response: { 204: NoContent('No Content: the account is gone'), ...errorResponses(...authErrors, ...wrongPassword, 'RateLimited') }
    }
  }, async (request, reply) => {
    await deleteAccount(fastify.db, fastify.mediaStorage, request.user.id, request.body.current_password, config.PASSWORD_HASH_COST)
    return reply.code(204).send(null)
  })
}

export default account
