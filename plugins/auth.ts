import jwt from '@fastify/jwt'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { AppError } from '../schemas/problems.js'
import type { AppDb } from './db.js'

/** The claims Roja signs (RFC 8725 §3.10, §3.11): who, which token generation, for which issuer and audience. */
export interface TokenClaims { id: string, gen: number, iss?: string, aud?: string, iat?: number, exp?: number }

/** Creator rights are read from the account on every request, so a revoked creator loses them at once (403). */
export function assertCreator (account: AccountBase): void {
  if (!account.is_creator) throw new AppError('UserNotCreator', 'only creators may do this')
}

/** What the plugins read of the caller: keys and limits by id and address, requireCreator the flag. */
export interface AccountBase { id: string, email: string, is_creator: boolean }

/**
 * Filled in by the app with its account type, as @fastify/jwt's FastifyJWT is:
 * `declare module '../plugins/auth.js' { interface AuthTypes { account: Account } }`.
 */
export interface AuthTypes {}

/** `request.user`: the app's account type, else what the plugins read of one. */
export type AuthAccount = AuthTypes extends { account: infer A extends AccountBase } ? A : AccountBase

/** How e-mail verification links are signed, how long they work, where they point. */
export interface EmailVerification {
  /** HMAC key, derived from JWT_SECRET for this one purpose */
  key: Buffer
  /** seconds (EMAIL_VERIFY_TTL) */
  ttlSeconds: number
  /** the front-end page a link opens (EMAIL_VERIFY_URL) */
  url: string
}

export interface AuthOptions {
  /** the account of a token's user id and generation; throws the problem to answer (gone, banned, revoked) */
  findAccount: (db: AppDb, id: string, generation: number) => Promise<AuthAccount>
  /** the error for a token that is malformed, forged or expired (401 invalid_token) */
  invalidToken: () => Error
  /** derives the e-mail verification key from JWT_SECRET */
  verificationKey: (secret: string) => Buffer
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    user: AuthAccount
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
    authenticateIfToken: (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void
    /** route onRequest hook, after authenticate: the caller must be a creator (403 UserNotCreator), known before any body is read */
    requireCreator: (request: FastifyRequest) => Promise<void>
    /** signs an access token for a user under its current token generation */
    issueToken: (user: { id: string, generation: number }) => { access_token: string, token_type: 'Bearer', expires_in: number }
    emailVerification: EmailVerification
  }
}

/** How far ahead of this clock a token's `iat` may be: another instance's clock may run ahead. */
const IAT_SKEW_SECONDS = 60

// The auth scheme is case-insensitive (RFC 9110 §11.1); the token is a three-part compact JWS.
const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i

/**
 * Bearer authentication with HS256 JWTs. Routes opt in by encapsulation: a group adds
 * `onRequest: fastify.authenticate` (or authenticateIfToken); nothing here matches URLs.
 */
export default fp<AuthOptions>(async (fastify, opts) => {
  const { config } = fastify
  const { findAccount, invalidToken } = opts
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

  fastify.decorate<EmailVerification>('emailVerification', {
    key: opts.verificationKey(config.jwtSecret), ttlSeconds: config.EMAIL_VERIFY_TTL, url: config.emailVerifyUrl
  })

  /** The claims of a valid bearer token, or 401. */
  function tokenClaims (request: FastifyRequest): { id: string, gen: number } {
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
    // A token from the future would outlive maxAge by as much: only the clocks' skew is allowed.
    if (iat > Date.now() / 1000 + IAT_SKEW_SECONDS) throw invalidToken()
    return { id, gen: gen as number }
  }

  // The one authentication path: every authenticated route, and every token sent to a public read, runs it.
  async function authenticate (request: FastifyRequest) {
    const { id, gen } = tokenClaims(request)
    request.user = await findAccount(fastify.db, id, gen)
  }
  fastify.decorate('authenticate', authenticate)
  // A plain hook: a public read sent without a token, nearly every one, pays no promise.
  fastify.decorate('authenticateIfToken', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    if (request.headers.authorization === undefined) return done()
    authenticate(request).then(() => done(), done)
  })

  fastify.decorate('requireCreator', async (request: FastifyRequest) => assertCreator(request.user))
}, { name: 'auth', dependencies: ['config', 'db', 'problems'] })
