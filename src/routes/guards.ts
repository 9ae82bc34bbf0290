import type { FastifyRequest } from 'fastify'
import type { Account } from '../domain/users.js'

/** Pieces every route group shares: the OpenAPI security requirements, public body limits, the auth error list. Owners: plugins/owner.ts. */

export const security = [{ bearerAuth: [] }]

/** Reads that take an optional token (authenticateIfToken): anyone, or a bearer whose token is checked and shows their own drafts. */
export const optionalSecurity: Array<Record<string, string[]>> = [{}, { bearerAuth: [] }]

/**
 * The body limit of the routes anyone may call with a JSON body (sign-up, token, verification):
 * their largest valid body is a few KiB, and parsing costs grow with the body (90,000 keys in 1 MB
 * take V8 about 100 ms), so a stranger's body stops here; BODY_LIMIT_BYTES holds for signed-in callers.
 */
export const PUBLIC_BODY_LIMIT = 64 * 1024

/** A public route's body limit: PUBLIC_BODY_LIMIT, or BODY_LIMIT_BYTES when that is lower. */
export const publicBodyLimit = (config: { BODY_LIMIT_BYTES: number }): number => Math.min(PUBLIC_BODY_LIMIT, config.BODY_LIMIT_BYTES)

/** The problems any authenticated route can answer with. */
export const authErrors = ['NotAuthenticated', 'InvalidCredentials', 'UserIsBanned'] as const

/** The caller's id on a read that takes an optional token (authenticateIfToken); undefined for anyone. */
export const callerId = (request: FastifyRequest): string | undefined => (request.user as Account | undefined)?.id
