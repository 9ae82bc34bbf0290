import { createHash } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../schemas/problems.js'
import { addRouteHook } from './route-hooks.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** a creating POST: honours `Idempotency-Key` */
    idempotent?: boolean
  }
  interface FastifyRequest {
    idempotency?: { scope: string, key: string }
  }
}

const TTL_MS = 24 * 3600 * 1000
const KEY = /^[\x21-\x7e]{1,255}$/
// A key claimed by a request that never finished (the process died) is free again after this.
const ABANDONED_MS = 60_000
const POLL_MS = 25

function scopeOf (request: FastifyRequest): string {
  return request.user?.id ?? `anonymous:${request.ip}`
}

function requestHash (request: FastifyRequest): string {
  return createHash('sha256').update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`).digest('hex')
}

/**
 * Idempotent creates: the first request with a key claims it in the database and its 2xx
 * answer is stored there for 24 h; a retry with the same key and body gets that answer back
 * and creates nothing; a concurrent twin waits for the first to finish. Same key, other body: 422.
 */
export default fp(async (fastify) => {
  const { db } = fastify

  // Only the routes that create (config.idempotent) carry the hooks: every other request skips them.
  fastify.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return
    addRouteHook(route, 'preHandler', claimKey)
    addRouteHook(route, 'onSend', storeAnswer)
  })

  async function claimKey (request: FastifyRequest, reply: FastifyReply) {
    const key = request.headers['idempotency-key']
    if (key === undefined) return
    if (typeof key !== 'string' || !KEY.test(key)) {
      throw new AppError('ValidationFailed', 'Idempotency-Key must be 1 to 255 visible ASCII characters', {
        errors: [{ in: 'header', field: '/idempotency-key', rule: 'pattern', message: 'must be 1 to 255 visible ASCII characters' }]
      })
    }
    const scope = scopeOf(request)
    const hash = requestHash(request)
    const deadline = Date.now() + 30_000
    for (;;) {
      const now = new Date()
      await db.deleteFrom('idempotency_key').where('user_id', '=', scope).where('key', '=', key)
        .where(eb => eb.or([eb('expires_at', '<', now.toISOString()),
          eb.and([eb('status_code', 'is', null), eb('created_at', '<', new Date(now.getTime() - ABANDONED_MS).toISOString())])]))
        .execute()
      const claimed = await db.insertInto('idempotency_key').values({
        user_id: scope,
        key,
        method: request.method,
        path: request.url,
        request_hash: hash,
        status_code: null,
        response_body: null,
        location: null,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + TTL_MS).toISOString()
      }).onConflict(oc => oc.columns(['user_id', 'key']).doNothing()).executeTakeFirst()
      if (Number(claimed.numInsertedOrUpdatedRows ?? 0) === 1) {
        request.idempotency = { scope, key }
        return
      }
      const row = await db.selectFrom('idempotency_key').selectAll()
        .where('user_id', '=', scope).where('key', '=', key).executeTakeFirst()
      if (!row) continue // expired and removed between our two statements: claim again
      if (row.request_hash !== hash) {
        throw new AppError('ValidationFailed', 'this Idempotency-Key was used with another request', {
          errors: [{ in: 'header', field: '/idempotency-key', rule: 'idempotency', message: 'already used with another method, path or body' }]
        })
      }
      if (row.status_code !== null) {
        if (row.location) reply.header('location', row.location)
        return reply.code(row.status_code).header('idempotent-replayed', 'true')
          .type('application/json; charset=utf-8').serializer((p: unknown) => p as string).send(row.response_body)
      }
      if (Date.now() > deadline) throw new AppError('Conflict', 'a request with this Idempotency-Key is still in progress')
      await new Promise(resolve => setTimeout(resolve, POLL_MS))
    }
  }

  async function storeAnswer (request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const claim = request.idempotency
    if (!claim) return payload
    request.idempotency = undefined
    const where = db.updateTable('idempotency_key').where('user_id', '=', claim.scope).where('key', '=', claim.key)
    if (reply.statusCode >= 200 && reply.statusCode < 300) {
      const location = reply.getHeader('location')
      await where.set({
        status_code: reply.statusCode,
        response_body: typeof payload === 'string' ? payload : null,
        location: typeof location === 'string' ? location : null
      }).execute()
    } else {
      // A failed attempt stores nothing: the client may retry with the same key.
      await db.deleteFrom('idempotency_key').where('user_id', '=', claim.scope).where('key', '=', claim.key).execute()
    }
    return payload
  }

  // Expired keys are removed now and then, so the table stays small.
  const timer = setInterval(() => {
    db.deleteFrom('idempotency_key').where('expires_at', '<', new Date().toISOString()).execute().catch(() => {})
  }, 3600_000)
  timer.unref()
  fastify.addHook('onClose', async () => clearInterval(timer))
}, { name: 'idempotency', dependencies: ['db', 'problems'] })
