import { hash } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../schemas/problems.js'
import { addRouteHook } from './route-hooks.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the route answers one resource: send its ETag and honour If-None-Match */
    etag?: boolean
  }
  interface FastifyReply {
    /**
     * The ETag `resource` would have as this URL's GET answers it: serialized by that route's
     * response schema. If-Match compares against it (assertIfMatch).
     */
    representationTag: (resource: unknown) => string
    /**
     * The one conditional-GET rule: sends `etag`, and on GET or HEAD whose If-None-Match names it
     * sets 304 and returns true. JSON answers are tagged after serialization (`config.etag`); a
     * route that sends its own bytes (media) calls it with theirs.
     */
    conditional: (etag: string) => boolean
  }
}

/** The strong ETag of a representation: a hash of the bytes the API sends (one-shot `hash`: no Hash object). */
export function etagOf (bytes: string): string {
  return `"${hash('sha256', bytes, 'base64url').slice(0, 27)}"`
}

/**
 * For PUT and DELETE: a stale `If-Match` is 412 and nothing changes. Call it with the
 * resource as it is now, before changing it.
 */
export function assertIfMatch (request: FastifyRequest, reply: FastifyReply, current: unknown): void {
  const header = request.headers['if-match']
  if (header === undefined) return
  const wanted = header.split(',').map(s => s.trim().replace(/^W\//, ''))
  if (wanted.includes('*')) return
  if (!wanted.includes(reply.representationTag(current))) {
    throw new AppError('PreconditionFailed', 'the resource has changed since you read it (If-Match)')
  }
}

/** Does an If-None-Match / If-Match header name this ETag (or `*`)? Weak tags compare by their value. */
export function etagMatches (header: string | undefined, etag: string): boolean {
  if (!header) return false
  return header.split(',').some(s => { const v = s.trim().replace(/^W\//, ''); return v === '*' || v === etag })
}

/**
 * ETags on single-resource routes (`config.etag`): a hash of the bytes sent, taken after
 * serialization, so the representation is serialized once; 304 for a matching If-None-Match on GET.
 */
export default fp(async (fastify) => {
  // A plain (not async) hook: it runs on every answer of a single-resource route and never waits.
  function tagAnswer (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) {
    if (reply.statusCode === 304) return done(null, notModified(reply))
    // other answers, and a route's own bytes (a stream or a buffer: media sets their ETag itself)
    if (reply.statusCode !== 200 || typeof payload !== 'string') return done(null, payload)
    if (reply.conditional(etagOf(payload))) return done(null, notModified(reply))
    done(null, payload)
  }

  // What GET answers at each URL template with an ETag: the schema its 200 is serialized by.
  const representations = new Map<string, Record<string, unknown>>()
  fastify.addHook('onRoute', (route) => {
    if (!route.config?.etag) return
    addRouteHook(route, 'onSend', tagAnswer)
    const methods = [route.method].flat()
    const schema = (route.schema?.response as Record<string, unknown> | undefined)?.[200]
    if (methods.includes('GET') && schema !== undefined) representations.set(route.url, jsonSchemaOf(schema))
  })
  fastify.decorateReply('conditional', function (this: FastifyReply, etag: string) {
    this.header('etag', etag)
    const { method, headers } = this.request
    if ((method !== 'GET' && method !== 'HEAD') || !etagMatches(headers['if-none-match'], etag)) return false
    this.code(304)
    return true
  })
  fastify.decorateReply('representationTag', function (this: FastifyReply, resource: unknown) {
    const url = this.request.routeOptions.url ?? ''
    const schema = representations.get(url)
    if (schema === undefined) throw new Error(`If-Match on ${url}: no GET route there answers with an ETag`)
    return etagOf(this.serializeInput(resource as Record<string, unknown>, schema))
  })
}, { name: 'etag', dependencies: ['problems'] })

/** A 304 has no body and no content type. */
function notModified (reply: FastifyReply): string {
  reply.removeHeader('content-type')
  return ''
}

/** A response's schema, or its JSON content's where the route offers several types (media). */
function jsonSchemaOf (response: unknown): Record<string, unknown> {
  const content = (response as { content?: Record<string, { schema?: unknown }> }).content
  return (content?.['application/json']?.schema ?? response) as Record<string, unknown>
}
