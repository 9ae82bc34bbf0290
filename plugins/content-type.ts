import fp from 'fastify-plugin'
import { MERGE_PATCH_TYPES } from '../schemas/merge-patch.js'
import { AppError } from '../schemas/problems.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the media types this route's body may have; default application/json only (a PATCH: also application/merge-patch+json) */
    contentTypes?: string[]
  }
}

const JSON_TYPE = 'application/json'
const MERGE_PATCH_TYPE = 'application/merge-patch+json'
// type/subtype, optionally `; charset=utf-8`, and nothing else: no stray spaces, tabs or empty parameters.
const MEDIA_TYPE = /^([a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+)(?:; ?charset="?utf-8"?)?$/i
const MULTIPART = /^multipart\/form-data; ?boundary=("[^"]{1,70}"|[a-z0-9'()+_,./:=?-]{1,70})$/i

/**
 * A body must be application/json, or one of the route's `config.contentTypes` (multipart with a
 * boundary); a PATCH takes a JSON Merge Patch (RFC 7396) as application/merge-patch+json too:
 * 415 otherwise. At preParsing, so a missing token is 401 before a body is judged; strict on the
 * header's shape, so no odd variant reaches a parser whose body skips validation.
 */
export default fp(async (fastify) => {
  // Fastify would otherwise parse text/plain, the way a cross-site simple POST gets in.
  fastify.removeContentTypeParser('text/plain')
  // JSON and merge patches: Fastify's parser with its prototype-poisoning checks, members counted first.
  const { onProtoPoisoning, onConstructorPoisoning } = fastify.initialConfig
  const parse = fastify.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error')
  const counted: typeof parse = (request, body, done) => {
    const text = String(body)
    // a member is at least 4 characters (`"":0`): a shorter body cannot hold too many
    if (text.length > MAX_JSON_MEMBERS * 4 && membersOver(text, MAX_JSON_MEMBERS)) {
      return done(new AppError('PayloadTooLarge', `a JSON body holds at most ${MAX_JSON_MEMBERS} object members`), undefined)
    }
    parse(request, body, done)
  }
  fastify.removeContentTypeParser(JSON_TYPE)
  for (const type of [JSON_TYPE, MERGE_PATCH_TYPE]) fastify.addContentTypeParser(type, { parseAs: 'string' }, counted)

  // A plain (not async) hook: it runs on every request, nearly all without a body, and never waits.
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    if (!hasBody(request.headers)) return done(null, payload)
    const header = request.headers['content-type']
    const allowed = request.routeOptions.config?.contentTypes ?? (request.method === 'PATCH' ? MERGE_PATCH_TYPES : [JSON_TYPE])
    if (header === undefined) return done(refusal(allowed, `a body needs a Content-Type: ${allowed.join(' or ')}`))
    const type = mediaType(header)
    if (type === undefined || !allowed.includes(type)) {
      const patch = type === JSON_PATCH_TYPE ? 'a JSON Patch (RFC 6902) is not taken; ' : ''
      return done(refusal(allowed, `${patch}Content-Type must be ${allowed.join(' or ')}`))
    }
    done(null, payload)
  })
}, { name: 'content-type', dependencies: ['problems'] })

const JSON_PATCH_TYPE = 'application/json-patch+json'

/** No schema takes near so many members, and V8 takes about 100 ms to parse 90,000 distinct keys. */
export const MAX_JSON_MEMBERS = 10_000

/** Whether JSON text holds more than `max` object members (colons outside strings), read in one pass. */
export function membersOver (text: string, max: number): boolean {
  let members = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // a backslash: the next character is escaped
      else if (c === 34) inString = false
    } else if (c === 34) {
      inString = true
    } else if (c === 58 && ++members > max) {
      return true
    }
  }
  return false
}

/** 415; where a merge patch is taken, with `Accept-Patch` naming the types (RFC 5789). */
function refusal (allowed: string[], detail: string): AppError {
  const headers = allowed.includes(MERGE_PATCH_TYPE) ? { 'accept-patch': allowed.join(', ') } : undefined
  return new AppError('UnsupportedMediaType', detail, { headers })
}

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
