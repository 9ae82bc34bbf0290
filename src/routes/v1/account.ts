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
      description: 'Anyone: names an account by `email` or by `username`. When it is an active account with a verified address, ' +
        'Roja mails that address a link that sets a new password once, within 1 hour; the account\'s earlier links stop working. ' +
        'The answer is 202 whether or not such an account exists, in about the same time, so it tells nobody whether an address ' +
        'has an account. Limited per client and per address or username (429), whatever the answer would be.',
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
      description: 'Anyone holding the link: the token of the reset link Roja mailed (its `token` query parameter) and the new password ' +
        '(at least 12 characters). The password is set and every access token of the account stops working (204); sign in again. ' +
        'A token works once: used, replaced by a newer link, voided by a password or address change, expired (1 hour) or ' +
        'malformed, it is 422 InvalidResetToken (`errors[0].rule` is `expired` or `invalid`). Send the token in this body, ' +
        'never in a URL your page builds.',
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
      description: 'Signed-in users: the current password and a new one (at least 12 characters). Every access token of the account ' +
        'stops working at once, this one too; the answer is a fresh token. A verified address gets a notice; pending reset links ' +
        'stop working. A wrong current password is 403 WrongPassword; every attempt counts toward the sign-in limit of ' +
        'POST /v1/auth/token (AUTH_RATE_LIMIT_MAX per client and username, 429). The answer is never cached.',
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
      description: 'Signed-in users: the current password and the new address. Roja mails the new address a link (as for verification: ' +
        'it opens /verify-email, or EMAIL_VERIFY_URL, and is confirmed through POST /v1/email-verifications); the account keeps ' +
        'its address until the link is confirmed, then has the new one, verified. A verified current address gets a notice with no ' +
        'link. An address that belongs to another account gets no mail and the answer is the same 202, so nobody learns whose it is. ' +
        'Asking again voids the earlier link. The same address as now is 422. Counts against the mail limits and, as a password ' +
        'attempt, toward the sign-in limit.',
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
      description: 'Signed-in users: every access token of the account issued so far stops working at once, the one sent with this ' +
        'request too (204). Sign in again for a new one.',
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
      description: 'Signed-in users, with the current password in a JSON body: erases the account at once (204) — the profile, posts ' +
        '(with the reviews, comments and alerts on them), the caller\'s reviews and comments, shops and products, classes and students, ' +
        'media (their files too), alerts and the mail queued to the caller. Other people\'s alerts name the caller as "a former ' +
        'member". The username is free again. Nothing can be undone. A wrong password is 403 WrongPassword; every attempt ' +
        'counts toward the sign-in limit.',
      body: ref(AccountDeletion),
      response: { 204: NoContent('No Content: the account is gone'), ...errorResponses(...authErrors, ...wrongPassword, 'RateLimited') }
    }
  }, async (request, reply) => {
    await deleteAccount(fastify.db, fastify.mediaStorage, request.user.id, request.body.current_password, config.PASSWORD_HASH_COST)
    return reply.code(204).send(null)
  })
}

export default account
