import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, json } from '../../helper.js'
import { createCreator, type TestUser } from '../../fixtures.js'
import { createPost } from '../../post-fixtures.js'
import { grantCreator, revokeCreator } from '../../../src/domain/users.js'

/** What a creator owns: a draft post, a draft course with a chapter, a class, a shop with a product. */
async function holdings (app: FastifyInstance, owner: TestUser) {
  const post = async (url: string, payload: object) => {
    const res = await app.inject({ method: 'POST', url, headers: owner.headers, payload })
    if (res.statusCode !== 201) throw new Error(`${url}: ${res.body}`)
    return json(res).id as string
  }
  const draft = (await createPost(app, owner, { published_at: null })).id as string
  const course = (await createPost(app, owner, { type: 'COURSE', title: 'Course', published_at: null })).id as string
  const chapter = await post(`/v1/courses/${course}/chapters`, { title: 'One' })
  const cls = await post('/v1/classes', { name: 'Evening', course_id: course })
  const shop = await post('/v1/shops', { name: 'Records' })
  const product = await post(`/v1/shops/${shop}/products`, { name: 'LP', price_cents: 100, currency: 'EUR' })
  return { draft, course, chapter, cls, shop, product }
}

/** Every request that adds to or changes creator content, each with what it must not leave behind. */
function changes (h: Awaited<ReturnType<typeof holdings>>) {
  const patch = { 'content-type': 'application/merge-patch+json' }
  return [
    { method: 'PATCH', url: `/v1/posts/${h.draft}`, payload: { published_at: '2026-01-01T00:00:00Z' }, headers: patch },
    { method: 'PUT', url: `/v1/posts/${h.draft}`, payload: { type: 'ARTICLE', title: 'Published', published_at: '2026-01-01T00:00:00Z' } },
    { method: 'PATCH', url: `/v1/posts/${h.course}`, payload: { title: 'Renamed' }, headers: patch },
    { method: 'POST', url: `/v1/courses/${h.course}/chapters`, payload: { title: 'Two' } },
    { method: 'POST', url: `/v1/courses/${h.course}/chapters/${h.chapter}/lessons`, payload: { title: 'L' } },
    { method: 'POST', url: `/v1/classes/${h.cls}/students`, payload: { first_name: 'Eve', sex: 'F' } },
    { method: 'POST', url: '/v1/classes', payload: { name: 'Another' } },
    { method: 'PATCH', url: `/v1/classes/${h.cls}`, payload: { name: 'Renamed' }, headers: patch },
    { method: 'PUT', url: `/v1/chapters/${h.chapter}`, payload: { title: 'Renamed', position: 1 } },
    { method: 'PUT', url: `/v1/shops/${h.shop}`, payload: { name: 'Renamed' } },
    { method: 'POST', url: `/v1/shops/${h.shop}/products`, payload: { name: 'CD', price_cents: 50, currency: 'EUR' } },
    { method: 'PATCH', url: `/v1/shops/${h.shop}/products/${h.product}`, payload: { price_cents: 1 }, headers: patch },
    { method: 'POST', url: '/v1/posts', payload: { type: 'ARTICLE', title: 'New' } }
  ] as const
}

t.test('a revoked creator may add, change or publish nothing, and may still delete what they own', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const h = await holdings(app, owner)
  await revokeCreator(app.db, owner.username)

  const wrong: string[] = []
  for (const c of changes(h)) {
    const res = await app.inject({ ...c, headers: { ...owner.headers, ...('headers' in c ? c.headers : {}) } })
    if (res.statusCode !== 403 || json(res).code !== 'UserNotCreator') wrong.push(`${c.method} ${c.url}: ${res.statusCode} ${res.body.slice(0, 80)}`)
  }
  t.same(wrong, [], 'each change answers 403 UserNotCreator')

  const draft = json(await app.inject({ method: 'GET', url: `/v1/posts/${h.draft}`, headers: owner.headers }))
  t.equal(draft.published_at, null, 'the draft stays a draft')
  const products = json(await app.inject({ method: 'GET', url: `/v1/shops/${h.shop}/products` }))
  t.same(products.products.map((p: { name: string }) => p.name), ['LP'], 'no product was added')

  const removed = await app.inject({ method: 'DELETE', url: `/v1/shops/${h.shop}/products/${h.product}`, headers: owner.headers })
  t.equal(removed.statusCode, 204, 'a product can still be deleted')
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${h.draft}`, headers: owner.headers })).statusCode, 204, 'and a post')
})

t.test('another user still meets UserNotOwner first; granted again, the creator changes their content', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const h = await holdings(app, owner)
  await revokeCreator(app.db, other.username)
  const foreign = await app.inject({ method: 'PUT', url: `/v1/shops/${h.shop}`, headers: other.headers, payload: { name: 'Mine' } })
  t.equal(json(foreign).code, 'UserNotOwner')

  await revokeCreator(app.db, owner.username)
  await grantCreator(app.db, owner.username)
  const wrong: string[] = []
  for (const c of changes(h)) {
    const res = await app.inject({ ...c, headers: { ...owner.headers, ...('headers' in c ? c.headers : {}) } })
    if (res.statusCode >= 300) wrong.push(`${c.method} ${c.url}: ${res.statusCode} ${res.body.slice(0, 80)}`)
  }
  t.same(wrong, [], 'each change succeeds')
})
