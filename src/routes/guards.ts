import type { FastifyInstance, FastifyRequest } from 'fastify'
import { assertOwner, type AuthUser } from '../../plugins/auth.js'
import { assertIfMatch } from '../../plugins/etag.js'

/** Pieces every route group shares: the OpenAPI security requirement and the owner checks. */

export const security = [{ bearerAuth: [] }]

/** The problems any authenticated route can answer with. */
export const authErrors = ['NotAuthenticated', 'InvalidCredentials', 'UserIsBanned'] as const

/**
 * onRequest for public reads whose answer depends on who asks (a creator sees their own drafts):
 * a sent token is checked like on any authenticated route; no token reads as anyone.
 */
export function identifyIfToken (fastify: FastifyInstance) {
  return async (request: FastifyRequest) => {
    if (request.headers.authorization !== undefined) await fastify.authenticate(request)
  }
}

/** The caller's id on a public route, if a token was sent. */
export const viewerOf = (request: FastifyRequest): string | undefined => (request.user as AuthUser | undefined)?.id

/** The checks of PUT/DELETE, run against the resource as it is: the owner first (403), then If-Match (412). */
export const ownerAndIfMatch = <T>(request: FastifyRequest, ownerOf: (current: T) => string) => (current: T) => {
  assertOwner(request, ownerOf(current))
  assertIfMatch(request, current)
}
