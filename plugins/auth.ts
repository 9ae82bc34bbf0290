import jwt from '@fastify/jwt'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { AppError } from './problems.js'

export interface AuthUser {
  id: string
  username: string
  email: string
  is_creator: boolean
  is_active: boolean
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: { id: string }
    user: AuthUser
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook: a valid bearer token of an existing, active user, or 401/403 */
    authenticate: (request: FastifyRequest) => Promise<void>
    /**
     * The user id of a valid bearer token, or 401; the account is NOT read. Only for a route
     * that reads the user row in its own query and passes it to activeAccount (GET /profiles/me).
     */
    tokenUserId: (request: FastifyRequest) => string
    /** preHandler hook: the caller must be a creator (403 UserNotCreator) */
    requireCreator: (request: FastifyRequest) => Promise<void>
    /** signs an access token for a user id */
    issueToken: (userId: string) => { access_token: string, token_type: 'Bearer', expires_in: number }
  }
}

// The auth scheme is case-insensitive (RFC 9110 §11.1); the token is a three-part compact JWS.
const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i

const invalidToken = () => new AppError('InvalidCredentials', 'the token is invalid or has expired', {
  headers: { 'www-authenticate': 'Bearer error="invalid_token"' }
})

/**
 * The account rule, in one place: the token's user must still exist (401 invalid_token) and be
 * active (403 UserIsBanned). Read on every request, so a ban or a deletion takes effect at once.
 */
export function activeAccount<T extends { is_active: boolean | number }> (row: T | undefined): T {
  if (!row) throw invalidToken()
  if (!row.is_active) throw new AppError('UserIsBanned', 'this account is banned')
  return row
}

/** Throws UserNotOwner unless the caller owns the resource. */
export function assertOwner (request: FastifyRequest, ownerId: string): void {
  if (request.user.id !== ownerId) throw new AppError('UserNotOwner', 'this resource belongs to another user')
}

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

  fastify.decorate('tokenUserId', (request: FastifyRequest): string => {
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
  })

  fastify.decorate('authenticate', async (request: FastifyRequest) => {
    const id = fastify.tokenUserId(request)
    const user = activeAccount(await fastify.db.selectFrom('user')
      .select(['id', 'username', 'email', 'is_creator', 'is_active'])
      .where('id', '=', id)
      .executeTakeFirst())
    request.user = { ...user, is_creator: Boolean(user.is_creator), is_active: true }
  })

  fastify.decorate('requireCreator', async (request: FastifyRequest) => {
    if (!request.user.is_creator) throw new AppError('UserNotCreator', 'only creators may do this')
  })
}, { name: 'auth', dependencies: ['config', 'db', 'problems'] })
