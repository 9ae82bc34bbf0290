import type { FastifyReply, FastifyRequest } from 'fastify'
import { assertOwner } from '../domain/ownership.js'
import type { Account } from '../domain/users.js'
import { assertIfMatch } from '../../plugins/etag.js'

/** Pieces every route group shares: the OpenAPI security requirement and the owner checks. */

export const security = [{ bearerAuth: [] }]

/** Reads that take an optional token (authenticateIfToken): anyone, or a bearer whose token is checked and shows their own drafts. */
export const optionalSecurity: Array<Record<string, string[]>> = [{}, { bearerAuth: [] }]

/** The problems any authenticated route can answer with. */
export const authErrors = ['NotAuthenticated', 'InvalidCredentials', 'UserIsBanned'] as const

/** The caller's id on a read that takes an optional token (authenticateIfToken); undefined for anyone. */
export const callerId = (request: FastifyRequest): string | undefined => (request.user as Account | undefined)?.id

/** Awaits the resource a route acts under (a class, a course, a shop), lets only its owner through (403 UserNotOwner), and returns it. */
export async function ownedByCaller<T> (request: FastifyRequest, resource: Promise<T>, ownerOf: (resource: T) => string): Promise<T> {
  const found = await resource
  assertOwner(request.user.id, ownerOf(found))
  return found
}

/** The checks of PUT/DELETE, run against the resource as it is: the owner first (403), then If-Match (412). */
export const ownerAndIfMatch = <T>(request: FastifyRequest, reply: FastifyReply, ownerOf: (current: T) => string) => (current: T) => {
  assertOwner(request.user.id, ownerOf(current))
  assertIfMatch(request, reply, current)
}
