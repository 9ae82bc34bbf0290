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
    /** preHandler hook: the caller must be a creator (403 UserNotCreator) */
    requireCreator: (request: FastifyRequest) => Promise<void>
    /** signs an access token for a user id */
    issueToken: (userId: string) => { access_token: string, token_type: 'Bearer', expires_in: number }
  }
}

// The auth scheme is case-insensitive (RFC 9110 §11.1); the token is a three-part compact JWS.
const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i

/** Throws UserNotOwner unless the caller owns the resource (spec 5.4). */
export function assertOwner (request: FastifyRequest, ownerId: string): void {
  if (request.user.id !== ownerId) throw new AppError('UserNotOwner', 'this resource belongs to another user')
}

/**
 * Bearer authentication with HS256 JWTs (spec 5). Routes opt in by encapsulation:
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

  fastify.decorate('authenticate', async (request: FastifyRequest) => {
    const header = request.headers.authorization
    if (header === undefined || header === '') {
      throw new AppError('NotAuthenticated', 'this route needs a bearer token', { headers: { 'www-authenticate': 'Bearer' } })
    }
    const match = BEARER.exec(header)
    const invalid = new AppError('InvalidCredentials', 'the token is invalid or has expired', {
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' }
    })
    if (!match) throw invalid
    let payload: { id?: unknown }
    try {
      payload = fastify.jwt.verify<{ id?: unknown }>(match[1])
    } catch {
      throw invalid
    }
    if (typeof payload.id !== 'string') throw invalid
    const user = await fastify.db.selectFrom('user')
      .select(['id', 'username', 'email', 'is_creator', 'is_active'])
      .where('id', '=', payload.id)
      .executeTakeFirst()
    if (!user) throw invalid
    if (!user.is_active) throw new AppError('UserIsBanned', 'this account is banned')
    request.user = { ...user, is_creator: Boolean(user.is_creator), is_active: true }
  })

  fastify.decorate('requireCreator', async (request: FastifyRequest) => {
    if (!request.user.is_creator) throw new AppError('UserNotCreator', 'only creators may do this')
  })
}, { name: 'auth', dependencies: ['config', 'db', 'problems'] })
