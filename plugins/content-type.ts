import type { ValidateFunction } from 'ajv'
import type { preValidationHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { MERGE_PATCH_TYPES } from '../schemas/merge-patch.js'
import { AppError } from '../schemas/problems.js'
import { hasBody } from './problems.js'
import { addRouteHook } from './route-hooks.js'
import { controlPointer, largestJson, MAX_JSON_DEPTH, MAX_JSON_MEMBERS, MAX_JSON_VALUES, shapeFault, type ShapeFault } from './json-shape.js'

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
  // JSON and merge patches: the shape read first (one pass), then Fastify's parser with its
  // prototype-poisoning checks; a string with a control character is refused once parsed, by name.
  const { onProtoPoisoning, onConstructorPoisoning } = fastify.initialConfig
  const parse = fastify.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error')
  const shaped: typeof parse = (request, body, done) => {
    const fault = shapeFault(String(body))
    if (fault === undefined) return parse(request, body, done)
    if (fault !== 'control') return done(new AppError('PayloadTooLarge', TOO_LARGE[fault]), undefined)
    void parse(request, body, (err, value) => {
      if (err) return done(err, undefined)
      done(controlCharacters(controlPointer(value) ?? ''), undefined)
    })
  }
  fastify.removeContentTypeParser(JSON_TYPE)
  for (const type of [JSON_TYPE, MERGE_PATCH_TYPE]) fastify.addContentTypeParser(type, { parseAs: 'string' }, shaped)

  // Each route's body limit is the largest body its schema takes (BODY_LIMIT_BYTES at most), so a
  // route with small bodies never reads a large one.
  const limit = fastify.config.BODY_LIMIT_BYTES
  fastify.addHook('onRoute', function (route) {
    const body = route.schema?.body
    if (isContentKeyed(body)) addRouteHook(route, 'preValidation', bodilessAs(Object.keys(body.content)[0]))
    if (body === undefined || route.config?.contentTypes?.some(t => !JSON_TYPES.includes(t))) return
    const largest = largestJson(body, (ref) => this.getSchema(ref.replace(/#$/, '')))
    route.bodyLimit = Math.min(route.bodyLimit ?? limit, limit, bodyLimitFor(largest))
  })

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

function isContentKeyed (body: unknown): body is { content: Record<string, unknown> } {
  return typeof body === 'object' && body !== null && 'content' in body
}

/**
 * Fastify picks a content-keyed body schema by the request's media type, so a request with no
 * body (and no Content-Type) would skip validation (fastify/fastify#7038): it is validated as
 * the route's first media type instead, the way a JSON-only route validates an absent body.
 */
function bodilessAs (type: string): preValidationHookHandler {
  return function (request, _reply, done) {
    if (request.body !== undefined || hasBody(request.headers)) return done()
    const validate = (request.getValidationFunction('body') as unknown as Record<string, ValidateFunction>)[type]
    if (validate(undefined)) return done()
    done(Object.assign(new Error('body: invalid'), { statusCode: 400, validation: validate.errors, validationContext: 'body' }))
  }
}

const TOO_LARGE: Record<Exclude<ShapeFault, 'control'>, string> = {
  depth: `a JSON body nests at most ${MAX_JSON_DEPTH} levels of arrays and objects`,
  members: `a JSON body holds at most ${MAX_JSON_MEMBERS} object members`,
  values: `a JSON body holds at most ${MAX_JSON_VALUES} values`
}

function controlCharacters (field: string): AppError {
  const message = 'must not hold control characters other than tab, line feed and carriage return'
  return new AppError('ValidationFailed', `${field || 'body'}: ${message}`, { errors: [{ in: 'body', field, rule: 'controlCharacters', message }] })
}

const JSON_TYPES = [JSON_TYPE, MERGE_PATCH_TYPE]

/**
 * A route's body limit from the largest body its schema takes: twice that, for whitespace a
 * client may indent with, and 4 KiB more; Infinity (no bound in the schema) leaves BODY_LIMIT_BYTES.
 */
export function bodyLimitFor (largest: number): number {
  return Number.isFinite(largest) ? largest * 2 + 4096 : Infinity
}

/** 415; where a merge patch is taken, with `Accept-Patch` naming the types (RFC 5789). */
function refusal (allowed: string[], detail: string): AppError {
  const headers = allowed.includes(MERGE_PATCH_TYPE) ? { 'accept-patch': allowed.join(', ') } : undefined
  return new AppError('UnsupportedMediaType', detail, { headers })
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
