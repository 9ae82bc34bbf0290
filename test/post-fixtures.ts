import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { writeTimeIso } from '../src/db/clock.js'
import { json } from './helper.js'
import type { TestUser } from './fixtures.js'

export const MEDIA = 'http://127.0.0.1:3000/v1/media/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'
export const MISSING = '00000000-0000-4000-8000-000000000000'

/** Creates a post through the API (201 asserted by the caller's use of its id). */
export async function createPost (app: FastifyInstance, user: TestUser, body: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: user.headers,
    payload: { title: `Post ${Math.random().toString(36).slice(2)}`, type: 'ARTICLE', ...body }
  })
  if (res.statusCode !== 201) throw new Error(`createPost: ${res.statusCode} ${res.body}`)
  return json(res)
}

/** A post of `creatorId` put straight into the database (sort_at included), published now unless `published_at` says otherwise. */
export async function insertPost (
  app: FastifyInstance,
  creatorId: string,
  fields: { type?: 'ARTICLE' | 'COURSE'; title?: string; tags?: string[]; published_at?: string | null } = {}
): Promise<string> {
  const id = randomUUID()
  const now = writeTimeIso()
  await app.db
    .insertInto('post')
    .values({
      id,
      creator_id: creatorId,
      type: fields.type ?? 'ARTICLE',
      slug: `post-${id}`,
      title: fields.title ?? 'A post',
      body: '',
      tags: JSON.stringify(fields.tags ?? []),
      media_url: null,
      published_at: fields.published_at === undefined ? now : fields.published_at,
      created_at: now,
      updated_at: now,
      sort_at: now
    })
    .execute()
  return id
}

/**
 * Moves a post's timestamps into the past (minutes ago), so ordering tests do not depend on
 * two requests landing in different milliseconds.
 */
export async function backdate (app: FastifyInstance, postId: string, minutesAgo: number) {
  const at = new Date(Date.now() - minutesAgo * 60_000).toISOString()
  await app.db.updateTable('post').set({ created_at: at, updated_at: at, published_at: at, sort_at: at }).where('id', '=', postId).execute()
}

/** POSTs `payload` to `url` twice under one Idempotency-Key: the second answer is the first, replayed, and the list there holds one. */
export async function checkReplay (t: Test, app: FastifyInstance, url: string, owner: TestUser, payload: object) {
  const headers = { ...owner.headers, 'idempotency-key': randomUUID() }
  const first = await app.inject({ method: 'POST', url, headers, payload })
  const again = await app.inject({ method: 'POST', url, headers, payload })
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same(json(again), json(first))
  t.equal(json(await app.inject({ method: 'GET', url, headers: owner.headers })).total, 1)
  return { first, again, headers }
}

/** The list rules every list shares: limit 1..100, offset ≥ 0, sort enum, no unknown parameters. */
export async function checkListBounds (t: Test, app: FastifyInstance, url: string, headers: Record<string, string> = {}) {
  const sep = url.includes('?') ? '&' : '?'
  const status = async (query: string) => (await app.inject({ method: 'GET', url: `${url}${sep}${query}`, headers })).statusCode
  t.equal(await status('limit=0'), 422, 'limit 0 is refused')
  t.equal(await status('limit=1'), 200, 'limit 1 is accepted')
  t.equal(await status('limit=100'), 200, 'limit 100 is accepted')
  t.equal(await status('limit=101'), 422, 'limit 101 is refused')
  t.equal(await status('limit=ten'), 422, 'a non-numeric limit is refused')
  t.equal(await status('offset=-1'), 422, 'offset -1 is refused')
  t.equal(await status('offset=0'), 200, 'offset 0 is accepted')
  t.equal(await status('offset=9007199254740991'), 200, 'offset 2^53 - 1 (OFFSET_MAX) is accepted: an empty page')
  t.equal(await status('offset=9007199254740992'), 422, 'offset 2^53 is refused')
  t.equal(await status('offset=1e308'), 422, 'offset 1e308 is refused (it once reached SQL and failed with 500)')
  t.equal(await status('sort=nonsense'), 422, 'an unknown sort field is refused')
  t.equal(await status('sort=-created_at,'), 422, 'a dangling comma in sort is refused')
  t.equal(await status('colour=red'), 422, 'an unknown query parameter is refused')
  const res = await app.inject({ method: 'GET', url: `${url}${sep}limit=0`, headers })
  t.equal(json(res).code, 'ValidationFailed')
  t.equal(json(res).errors[0].in, 'query')
}
