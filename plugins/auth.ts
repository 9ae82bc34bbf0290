import jwt from '@fastify/jwt'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../src/domain/errors.js'
import { findAccount, invalidToken, type Account } from '../src/domain/users.js'


declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: { id: string }
    user: Account
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook: a valid bearer token of an existing, active user, or 401/403 */
    authenticate: (request: FastifyRequest) => Promise<void>
    /**
     * onRequest hook for reads whose answer depends on who asks (an owner sees their drafts):
     * a sent token is checked exactly as by authenticate; no Authorization header reads as anyone.
     */
    authenticateIfToken: (request: FastifyRequest) => Promise<void>
    /** preHandler hook: the caller must be a creator (403 UserNotCreator) */
    requireCreator: (request: FastifyRequest) => Promise<void>
    /** signs an access token for a user id */
    issueToken: (userId: string) => { access_token: string, token_type: 'Bearer', expires_in: number }
  }
}

// The auth scheme is case-insensitive (RFC 9110 §11.1); the token is a three-part compact JWS.
const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i

/**
 * Bearer authentication with HS256 JWTs. Routes opt in by encapsulation:
 * a group adds `onRequest: fastify.authenticate`; nothing here matches URLs.
 */
export default fp(async (fastify) => {
  const { config } = fastify
  await fastify.register(jwt, {
    secret: config.jwtSecret,
    sign: { algorithm: 'HS256', expiresIn: config.ACCESS_TOKEN_TTL },
    // Only HS256: `none`, RS*/ES* (key confusion) and every other algorithm are refused.
    // Verified tokens are cached (fast-jwt, bounded, never past their exp); the user row is still read per request.
    verify: { algorithms: ['HS256'], cache: true },
    decode: { complete: false }
  })

  fastify.decorate('issueToken', (userId: string) => ({
    access_token: fastify.jwt.sign({ id: userId }),
    token_type: 'Bearer' as const,
    expires_in: config.ACCESS_TOKEN_TTL
  }))

  /** The user id of a valid bearer token, or 401. */
  function tokenUserId (request: FastifyRequest): string {
    const header = request.headers.authorization
    if (header === undefined || header === '') {
      throw new AppError('NotAuthenticated', 'this route needs a bearer token', { headers: { 'www-authenticate': 'Bearer' } })
    }
    const match = BEARER.exec(header)
    if (!match) throw invalidToken()
    let payload: { id?: unknown }
    try {
      payload = fastify.jwt.verify<{ id?: unknown }>(match[1])
    } catch {
      throw invalidToken()
    }
    if (typeof payload.id !== 'string') throw invalidToken()
    return payload.id
  }

  // The one authentication path: every authenticated route, and every token sent to a public read, runs it.
  async function authenticate (request: FastifyRequest) {
    request.user = await findAccount(fastify.db, tokenUserId(request))
  }
  fastify.decorate('authenticate', authenticate)
  fastify.decorate('authenticateIfToken', async (request: FastifyRequest) => {
    if (request.headers.authorization !== undefined) await authenticate(request)
  })

  fastify.decorate('requireCreator', async (request: FastifyRequest) => {
    if (!request.user.is_creator) throw new AppError('UserNotCreator', 'only creators may do this')
  })
}, { name: 'auth', dependencies: ['config', 'db', 'problems'] })
