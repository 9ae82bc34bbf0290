import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../../../schemas/problems.js'
import { TokenForm, TokenRequest, TokenResponse } from '../../../schemas/auth.js'
import { ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { checkCredentials, normaliseUsername } from '../../domain/users.js'
import { publicBodyLimit } from '../guards.js'

const FORM = 'application/x-www-form-urlencoded'

/** The stricter limit of the token endpoint counts attempts per client and username. */
function usernameOf (request: FastifyRequest): string {
  const username = (request.body as { username?: unknown } | undefined)?.username
  return typeof username === 'string' ? normaliseUsername(username) : ''
}

/** POST /v1/auth/token: a bearer token for a username and password (JSON or the RFC 6749 form). */
const auth: FastifyPluginAsyncTypebox = async (fastify) => {
  // Only this encapsulated group parses forms (RFC 6749 §4.3.2); elsewhere they stay 415.
  fastify.addContentTypeParser(FORM, { parseAs: 'string' }, (_request, body, done) => {
    const params = new URLSearchParams(body as string)
    const out: Record<string, string> = {}
    for (const [key, value] of params) {
      // RFC 6749 §3.2: a parameter must not be sent more than once.
      if (key in out) return done(new AppError('MalformedBody', `the form repeats the parameter ${key}`), undefined)
      out[key] = value
    }
    done(null, out)
  })

  fastify.post('/auth/token', {
    bodyLimit: publicBodyLimit(fastify.config),
    onRequest: fastify.clientRateLimit,
    // the count the account routes that take the current password share with sign-in
    preHandler: fastify.passwordAttempt(usernameOf),
    config: {
      contentTypes: ['application/json', FORM],
      rateLimit: fastify.passwordRateLimit(usernameOf)
    },
    schema: {
      tags: ['auth'],
      operationId: 'createToken',
      summary: 'Exchange a username and password for a bearer token',
      body: {
        content: {
          'application/json': { schema: ref(TokenRequest) },
          [FORM]: { schema: ref(TokenForm) }
        }
      },
      response: { 200: ref(TokenResponse), ...errorResponses('MalformedBody', 'InvalidCredentials', 'UserIsBanned', 'ValidationFailed', 'RateLimited') }
    }
  }, async (request, reply) => {
    const body = request.body as TokenRequest | TokenForm
    const user = await checkCredentials(fastify.db, body.username, body.password, fastify.config.PASSWORD_HASH_COST)
    // RFC 6749 §5.1: token responses must not be cached.
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(fastify.issueToken(user))
  })
}

export default auth
