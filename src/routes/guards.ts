import type { FastifyReply, FastifyRequest } from 'fastify'
import { assertOwner } from '../domain/ownership.js'
import type { Account } from '../domain/users.js'
import { assertCreator } from '../../plugins/auth.js'
import { assertIfMatch } from '../../plugins/etag.js'

/** Pieces every route group shares: the OpenAPI security requirement and the owner checks. */

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

/**
 * Who may act: the owner (403 UserNotOwner), and for `asCreator` a creator still (403 UserNotCreator):
 * adding to or changing creator content needs the rights now, deleting it only ownership.
 */
function assertActor (request: FastifyRequest, ownerId: string, asCreator: boolean): void {
  assertOwner(request.user.id, ownerId)
  if (asCreator) assertCreator(request.user)
}

/** Awaits the resource a route acts under (a class, a course, a shop), lets only its owner through, and returns it. */
export async function ownedByCaller<T> (request: FastifyRequest, resource: Promise<T>, ownerOf: (resource: T) => string, { asCreator = false } = {}): Promise<T> {
  const found = await resource
  assertActor(request, ownerOf(found), asCreator)
  return found
}

/** The checks of PUT/PATCH/DELETE, run against the resource as it is: who may act first (403), then If-Match (412). */
export const ownerAndIfMatch = <T>(request: FastifyRequest, reply: FastifyReply, ownerOf: (current: T) => string, { asCreator = false } = {}) => (current: T) => {
  assertActor(request, ownerOf(current), asCreator)
  assertIfMatch(request, reply, current)
}
