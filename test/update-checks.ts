import type { FastifyInstance, InjectOptions } from 'fastify'
import type { Test } from 'tap'
import { json } from './helper.js'
import type { TestUser } from './fixtures.js'

/** What the update tests share: a resource's state as its owner reads it, and a refusal that writes nothing. */

export const PATCH = { 'content-type': 'application/merge-patch+json' }

/** What a resource is, as its owner reads it: the answer, its ETag, and for a post its tag rows. */
export async function state (app: FastifyInstance, url: string, owner: TestUser) {
  const res = await app.inject({ method: 'GET', url, headers: owner.headers })
  const id = url.split('/').pop()!
  const tags = /^\/v1\/posts\/[^/]+$/.test(url)
    ? (await app.db.selectFrom('post_tag').select('tag').where('post_id', '=', id).orderBy('tag').execute()).map(r => r.tag)
    : []
  return { status: res.statusCode, body: json(res), etag: res.headers.etag, tags }
}

/**
 * `request` answers `expected` (status and problem code) and leaves what the owner reads at
 * `watched` as it was: the resource's URL (the request's unless it names its own), or several (a
 * move would shift its siblings, so their lists are watched too).
 */
export async function refusedWritingNothing (
  t: Test,
  app: FastifyInstance,
  watched: string | string[],
  owner: TestUser,
  request: InjectOptions,
  expected: [number, string],
  name: string
) {
  const urls = typeof watched === 'string' ? [watched] : watched
  const states = () => Promise.all(urls.map(url => state(app, url, owner)))
  const before = await states()
  const res = await app.inject({ url: urls[0], ...request })
  t.same([res.statusCode, json(res).code], expected, `${name}: ${expected.join(' ')}`)
  t.same(await states(), before, `${name}: nothing written`)
}
