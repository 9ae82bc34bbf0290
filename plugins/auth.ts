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

/** The claims Roja signs (RFC 8725 §3.10, §3.11): who, which token generation, for which issuer and audience. */
export interface TokenClaims { id: string, gen: number, iss?: string, aud?: string, iat?: number, exp?: number }

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    user: AuthUser
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook: a valid bearer token of an existing, active user, or 401/403 */
    authenticate: (request: FastifyRequest) => Promise<void>
    /**
     * The claims of a valid bearer token, or 401; the account is NOT read. Only for a route
     * that reads the user row in its own query and passes it to activeAccount (GET /profiles/me).
     */
    tokenClaims: (request: FastifyRequest) => { id: string, gen: number }
    /** preHandler hook: the caller must be a creator (403 UserNotCreator) */
    requireCreator: (request: FastifyRequest) => Promise<void>
    /** signs an access token for a user under its current token generation */
    issueToken: (user: { id: string, generation: number }) => { access_token: string, token_type: 'Bearer', expires_in: number }
  }
}

// The auth scheme is case-insensitive (RFC 9110 §11.1); the token is a three-part compact JWS.
const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i

const invalidToken = () => new AppError('InvalidCredentials', 'the token is invalid or has expired', {
  headers: { 'www-authenticate': 'Bearer error="invalid_token"' }
})

/**
 * The account rule, in one place: the token's user must still exist (401 invalid_token), be
 * active (403 UserIsBanned), and the token be of its current generation (401). Read on
 * every request, so a ban, a revocation or a deletion takes effect at once on every instance.
 */
export function activeAccount<T extends { is_active: boolean | number, token_generation: number }> (row: T | undefined, generation: number): T {
  if (!row) throw invalidToken()
  // A banned caller is told so (403) whatever its token's generation; the ban bumped it, so after an unban it is 401.
  if (!row.is_active) throw new AppError('UserIsBanned', 'this account is banned')
  if (Number(row.token_generation) !== generation) throw invalidToken()
  return row
}

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
    sign: { algorithm: 'HS256', expiresIn: config.ACCESS_TOKEN_TTL, iss: config.JWT_ISSUER, aud: config.JWT_AUDIENCE },
    // Only HS256: `none`, RS*/ES* (key confusion) and every other algorithm are refused. exp and
    // iat are required, the issuer and audience must be ours, and no token outlives ACCESS_TOKEN_TTL.
    // Verified tokens are cached (fast-jwt, bounded, never past their exp); the user row is still read per request.
    verify: {
      algorithms: ['HS256'],
      cache: true,
      requiredClaims: ['id', 'gen', 'iat', 'exp', 'iss', 'aud'],
      allowedIss: config.JWT_ISSUER,
      allowedAud: config.JWT_AUDIENCE,
      maxAge: config.ACCESS_TOKEN_TTL * 1000
    },
    decode: { complete: false }
  })

  fastify.decorate('issueToken', (user: { id: string, generation: number }) => ({
    access_token: fastify.jwt.sign({ id: user.id, gen: user.generation }),
    token_type: 'Bearer' as const,
    expires_in: config.ACCESS_TOKEN_TTL
  }))

  fastify.decorate('tokenClaims', (request: FastifyRequest): { id: string, gen: number } => {
    const header = request.headers.authorization
    if (header === undefined || header === '') {
      throw new AppError('NotAuthenticated', 'this route needs a bearer token', { headers: { 'www-authenticate': 'Bearer' } })
    }
    const match = BEARER.exec(header)
    if (!match) throw invalidToken()
    let payload: { id?: unknown, gen?: unknown, iat?: unknown, exp?: unknown }
    try {
      payload = fastify.jwt.verify<typeof payload>(match[1])
    } catch {
      throw invalidToken()
    }
    const { id, gen, iat, exp } = payload
    if (typeof id !== 'string' || !Number.isSafeInteger(gen) || typeof iat !== 'number' || typeof exp !== 'number') throw invalidToken()
    // maxAge bounds a token's age by its iat; this bounds what it claims (an exp years away).
    if (exp - iat > config.ACCESS_TOKEN_TTL) throw invalidToken()
    return { id, gen: gen as number }
  })

  fastify.decorate('authenticate', async (request: FastifyRequest) => {
    const { id, gen } = fastify.tokenClaims(request)
    const { token_generation: _, ...user } = activeAccount(await fastify.db.selectFrom('user')
      .select(['id', 'username', 'email', 'is_creator', 'is_active', 'token_generation'])
      .where('id', '=', id)
      .executeTakeFirst(), gen)
    request.user = { ...user, is_creator: Boolean(user.is_creator), is_active: true }
  })

  fastify.decorate('requireCreator', async (request: FastifyRequest) => {
    if (!request.user.is_creator) throw new AppError('UserNotCreator', 'only creators may do this')
  })
}, { name: 'auth', dependencies: ['config', 'db', 'problems'] })
