import fp from 'fastify-plugin'
import { AppError } from '../schemas/problems.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the media types this route's body may have; default application/json only */
    contentTypes?: string[]
  }
}

const JSON_TYPE = 'application/json'
// type/subtype, optionally `; charset=utf-8`, and nothing else: no stray spaces, tabs or empty parameters.
const MEDIA_TYPE = /^([a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+)(?:; ?charset="?utf-8"?)?$/i
const MULTIPART = /^multipart\/form-data; ?boundary=("[^"]{1,70}"|[a-z0-9'()+_,./:=?-]{1,70})$/i

/**
 * A body must be application/json, or one of the route's `config.contentTypes` (multipart with a
 * boundary): 415 otherwise. At preParsing, so a missing token is 401 before a body is judged; strict
 * on the header's shape, so no odd variant reaches a parser whose body skips validation.
 */
export default fp(async (fastify) => {
  // Fastify would otherwise parse text/plain, the way a cross-site simple POST gets in.
  fastify.removeContentTypeParser('text/plain')

  // A plain (not async) hook: it runs on every request, nearly all without a body, and never waits.
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    if (!hasBody(request.headers)) return done(null, payload)
    const header = request.headers['content-type']
    const allowed = request.routeOptions.config?.contentTypes ?? [JSON_TYPE]
    if (header === undefined) return done(new AppError('UnsupportedMediaType', `a body needs a Content-Type: ${allowed.join(' or ')}`))
    const type = mediaType(header)
    if (type === undefined || !allowed.includes(type)) {
      return done(new AppError('UnsupportedMediaType', `Content-Type must be ${allowed.join(' or ')}`))
    }
    done(null, payload)
  })
}, { name: 'content-type', dependencies: ['problems'] })

function hasBody (headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length']
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/** The lower-cased media type of a well-formed header, or undefined. */
export function mediaType (header: string): string | undefined {
  const multipart = MULTIPART.exec(header)
  if (multipart) return 'multipart/form-data'
  const match = MEDIA_TYPE.exec(header)
  const type = match?.[1].toLowerCase()
  // a form without a boundary cannot be parsed: not a usable multipart type
  return type?.startsWith('multipart/') ? undefined : type
}
