import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createPost } from '../../../src/domain/posts.js'
import { createCreator } from '../../fixtures.js'
import { build, json } from '../../helper.js'

interface Page { posts: Array<{ id: string, type: string }>, total: number, next_cursor: string | null }

/** `n` published posts by one creator, alternating type, every third tagged "deep". */
async function seed (app: FastifyInstance, n: number, creatorId?: string) {
  const creator = creatorId ?? (await createCreator(app)).id
  for (let i = 0; i < n; i++) {
    await createPost(app.db, creator, { type: i % 2 === 0 ? 'ARTICLE' : 'COURSE', title: `Post ${i}`, tags: i % 3 === 0 ? ['deep'] : [] })
  }
  return creator
}

async function page (app: FastifyInstance, query: string): Promise<Page> {
  const res = await app.inject({ method: 'GET', url: `/v2/posts?${query}` })
  if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`)
  return json<Page>(res)
}

async function walk (app: FastifyInstance, query: string): Promise<{ ids: string[], pages: Page[] }> {
  const pages: Page[] = []
  let cursor: string | null = null
  do {
    const p: Page = await page(app, `${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    pages.push(p)
    cursor = p.next_cursor
  } while (cursor !== null && pages.length < 100)
  return { ids: pages.flatMap(p => p.posts.map(post => post.id)), pages }
}

t.test('walking every page gives each post once, in v1 order, with the total on each page', async (t) => {
  const app = await build(t)
  await seed(app, 23)
  const { ids, pages } = await walk(app, 'limit=5')
  t.equal(pages.length, 5)
  t.same(pages.map(p => p.posts.length), [5, 5, 5, 5, 3])
  t.ok(pages.every(p => p.total === 23))
  t.equal(new Set(ids).size, 23, 'no duplicates, no skips')
  t.equal(pages.at(-1)!.next_cursor, null)
  const v1 = json(await app.inject({ method: 'GET', url: '/v1/posts?limit=100' }))
  t.same(ids, v1.posts.map((p: { id: string }) => p.id), 'same order as v1 (sort_at desc, id desc)')
})

t.test('a page that ends exactly at the last post has no next cursor', async (t) => {
  const app = await build(t)
  await seed(app, 4)
  const p = await page(app, 'limit=4')
  t.equal(p.posts.length, 4)
  t.equal(p.next_cursor, null)
  const empty = await page(app, 'limit=10')
  t.equal(empty.total, 4)
})

t.test('a post written mid-walk does not shift the pages that follow', async (t) => {
  const app = await build(t)
  const creator = await seed(app, 12)
  const before = (await walk(app, 'limit=4')).ids
  const first = await page(app, 'limit=4')
  await createPost(app.db, creator, { type: 'ARTICLE', title: 'Written meanwhile' })
  const second = await page(app, `limit=4&cursor=${encodeURIComponent(first.next_cursor!)}`)
  t.same(second.posts.map(p => p.id), before.slice(4, 8))
  t.equal(second.total, 13, 'the total counts the new post')
  const third = await page(app, `limit=4&cursor=${encodeURIComponent(second.next_cursor!)}`)
  t.same(third.posts.map(p => p.id), before.slice(8, 12))
  t.equal(third.next_cursor, null)
})

t.test('the v1 filters apply: type, tags, creator_id', async (t) => {
  const app = await build(t)
  const a = await seed(app, 9)
  await seed(app, 4)
  t.equal((await walk(app, 'limit=2&type=COURSE')).ids.length, 6)
  const tagged = await walk(app, 'limit=2&tags=deep')
  t.equal(tagged.ids.length, 5)
  t.equal(tagged.pages[0].total, 5)
  const mine = await walk(app, `limit=3&creator_id=${a}`)
  t.equal(mine.ids.length, 9)
  t.equal(mine.pages[0].total, 9)
})

t.test('drafts and scheduled posts are not listed', async (t) => {
  const app = await build(t)
  const creator = await seed(app, 2)
  await createPost(app.db, creator, { type: 'ARTICLE', title: 'Draft', published_at: null })
  await createPost(app.db, creator, { type: 'ARTICLE', title: 'Later', published_at: '2999-01-01T00:00:00Z' })
  const p = await page(app, 'limit=10')
  t.equal(p.total, 2)
  t.equal(p.posts.length, 2)
})

t.test('a forged, altered or malformed cursor is 422 on query /cursor', async (t) => {
  const app = await build(t)
  await seed(app, 3)
  const { next_cursor: cursor } = await page(app, 'limit=1')
  const [payload, mac] = cursor!.split('.')
  const position = JSON.parse(Buffer.from(payload, 'base64url').toString())
  const altered = Buffer.from(JSON.stringify({ ...position, id: 'ffffffff-ffff-4fff-bfff-ffffffffffff' })).toString('base64url')
  for (const bad of [`${altered}.${mac}`, `${payload}.${mac.slice(0, -2)}AA`, payload, 'not-a-cursor', `${payload}.${mac}.x`, `.${mac}`]) {
    const res = await app.inject({ method: 'GET', url: `/v2/posts?cursor=${encodeURIComponent(bad)}` })
    t.equal(res.statusCode, 422, bad)
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
    const body = json(res)
    t.equal(body.code, 'ValidationFailed')
    t.same(body.errors.map((e: { in: string, field: string }) => [e.in, e.field]), [['query', '/cursor']])
  }
})

t.test('a cursor signed with another secret is refused', async (t) => {
  const other = await build(t, { env: { JWT_SECRET: 'another-secret-that-is-at-least-32-bytes!!' } })
  await seed(other, 2)
  const { next_cursor: cursor } = await page(other, 'limit=1')
  const app = await build(t)
  await seed(app, 2)
  const res = await app.inject({ method: 'GET', url: `/v2/posts?cursor=${encodeURIComponent(cursor!)}` })
  t.equal(res.statusCode, 422)
})

t.test('limit is 1..100, default 10; offset and unknown parameters are refused', async (t) => {
  const app = await build(t)
  await seed(app, 12)
  t.equal((await page(app, '')).posts.length, 10)
  t.equal((await page(app, 'limit=1')).posts.length, 1)
  t.equal((await page(app, 'limit=100')).posts.length, 12)
  for (const q of ['limit=0', 'limit=101', 'offset=5', 'page=2', 'cursor=']) {
    const res = await app.inject({ method: 'GET', url: `/v2/posts?${q}` })
    t.equal(res.statusCode, 422, q)
  }
})

t.test('v1 keeps paging by offset', async (t) => {
  const app = await build(t)
  await seed(app, 3)
  const res = await app.inject({ method: 'GET', url: '/v1/posts?limit=2&offset=2' })
  t.equal(res.statusCode, 200)
  t.equal(json(res).posts.length, 1)
  t.equal(json(res).total, 3)
})
