import { createHash } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../src/domain/errors.js'
import { addRouteHook } from './route-hooks.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the route answers one resource: send its ETag and honour If-None-Match */
    etag?: boolean
  }
}

/** The strong ETag of a resource as the API shows it: a hash of its JSON representation. */
export function etagOf (resource: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(resource)).digest('base64url').slice(0, 27)}"`
}

/**
 * For PUT and DELETE: a stale `If-Match` is 412 and nothing changes. Call it with the
 * resource as it is now, before changing it.
 */
export function assertIfMatch (request: FastifyRequest, current: unknown): void {
  const header = request.headers['if-match']
  if (header === undefined) return
  const wanted = header.split(',').map(s => s.trim().replace(/^W\//, ''))
  if (wanted.includes('*')) return
  if (!wanted.includes(etagOf(current))) {
    throw new AppError('PreconditionFailed', 'the resource has changed since you read it (If-Match)')
  }
}

/** Does an If-None-Match / If-Match header name this ETag (or `*`)? Weak tags compare by their value. */
export function etagMatches (header: string | undefined, etag: string): boolean {
  if (!header) return false
  return header.split(',').some(s => { const v = s.trim().replace(/^W\//, ''); return v === '*' || v === etag })
}

/** ETags on single-resource routes (`config.etag`), and 304 for a matching If-None-Match on GET. */
export default fp(async (fastify) => {
  // Plain (not async) hooks: they run on every answer of a single-resource route and never wait.
  function setEtag (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) {
    if (reply.statusCode !== 200 || payload === null || typeof payload !== 'object') return done(null, payload)
    const etag = etagOf(payload)
    reply.header('etag', etag)
    if ((request.method === 'GET' || request.method === 'HEAD') && etagMatches(request.headers['if-none-match'], etag)) {
      reply.code(304)
      return done(null, null)
    }
    done(null, payload)
  }
  function emptyNotModified (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) {
    if (reply.statusCode !== 304) return done(null, payload)
    reply.removeHeader('content-type')
    done(null, '')
  }
  fastify.addHook('onRoute', (route) => {
    if (!route.config?.etag) return
    addRouteHook(route, 'preSerialization', setEtag)
    addRouteHook(route, 'onSend', emptyNotModified)
  })
}, { name: 'etag', dependencies: ['problems'] })
