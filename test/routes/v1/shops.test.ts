import { randomUUID } from 'node:crypto'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, json } from '../../helper.js'
import { createCreator, createUser, type TestUser } from '../../fixtures.js'
import { checkReplay } from '../../post-fixtures.js'

async function openShop (app: FastifyInstance, owner: TestUser, body: object = { name: 'Records' }) {
  const res = await app.inject({ method: 'POST', url: '/v1/shops', headers: owner.headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`shop not created: ${res.body}`)
  return json(res)
}

async function addProduct (app: FastifyInstance, owner: TestUser, shopId: string, body: object) {
  const res = await app.inject({ method: 'POST', url: `/v1/shops/${shopId}/products`, headers: owner.headers, payload: body })
  if (res.statusCode !== 201) throw new Error(`product not created: ${res.body}`)
  return json(res)
}

t.test('POST /v1/shops: a creator opens a shop (201, Location, owner shown without e-mail)', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app, { firstName: 'Ada', lastName: 'Byron' })
  const res = await app.inject({ method: 'POST', url: '/v1/shops', headers: owner.headers, payload: { name: 'Records', description: 'vinyl' } })
  t.equal(res.statusCode, 201)
  const shop = json(res)
  t.equal(res.headers.location, `/v1/shops/${shop.id}`)
  t.same(shop.owner, { id: owner.id, username: owner.username, first_name: 'Ada', last_name: 'Byron' })
  t.equal(shop.name, 'Records')
  t.equal(shop.description, 'vinyl')
  t.match(shop.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/)
  const got = await app.inject({ method: 'GET', url: res.headers.location as string })
  t.same(json(got), shop)
})

t.test('POST /v1/shops: authorisation and validation', async (t) => {
  const app = await build(t)
  const user = await createUser(app)
  const banned = await createCreator(app, { active: false })
  const creator = await createCreator(app)
  const none = await app.inject({ method: 'POST', url: '/v1/shops', payload: { name: 'x' } })
  t.equal(none.statusCode, 401)
  t.equal(json(none).code, 'NotAuthenticated')
  const notCreator = await app.inject({ method: 'POST', url: '/v1/shops', headers: user.headers, payload: { name: 'x' } })
  t.equal(notCreator.statusCode, 403)
  t.equal(json(notCreator).code, 'UserNotCreator')
  const isBanned = await app.inject({ method: 'POST', url: '/v1/shops', headers: banned.headers, payload: { name: 'x' } })
  t.equal(isBanned.statusCode, 403)
  t.equal(json(isBanned).code, 'UserIsBanned')
  for (const payload of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 'x', extra: 1 }]) {
    const res = await app.inject({ method: 'POST', url: '/v1/shops', headers: creator.headers, payload })
    t.equal(res.statusCode, 422, JSON.stringify(payload).slice(0, 40))
    t.equal(json(res).code, 'ValidationFailed')
  }
  const edge = await app.inject({ method: 'POST', url: '/v1/shops', headers: creator.headers, payload: { name: 'x'.repeat(200), description: null } })
  t.equal(edge.statusCode, 201)
  t.equal(json(edge).description, null)
})

t.test('POST /v1/shops honours Idempotency-Key: a replay creates nothing', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const { first, again, headers } = await checkReplay(t, app, '/v1/shops', owner, { name: 'Once' })
  t.equal(first.statusCode, 201)
  t.equal(again.statusCode, 201)
  t.equal(again.headers.location, first.headers.location)
  const other = await app.inject({ method: 'POST', url: '/v1/shops', headers, payload: { name: 'Other' } })
  t.equal(other.statusCode, 422)
})

t.test('GET /v1/shops lists shops publicly with total, paging, sort, owner filter and Link', async (t) => {
  const app = await build(t)
  const a = await createCreator(app)
  const b = await createCreator(app)
  for (const name of ['c', 'a', 'b']) await openShop(app, a, { name })
  await openShop(app, b, { name: 'z' })
  const all = await app.inject({ method: 'GET', url: '/v1/shops?sort=name&limit=2' })
  t.equal(all.statusCode, 200)
  t.same(json(all).shops.map((s: any) => s.name), ['a', 'b'])
  t.equal(json(all).total, 4)
  t.match(all.headers.link, /rel="next"/)
  const desc = json(await app.inject({ method: 'GET', url: '/v1/shops?sort=-name' }))
  t.same(desc.shops.map((s: any) => s.name), ['z', 'c', 'b', 'a'])
  const byOwner = json(await app.inject({ method: 'GET', url: `/v1/shops?owner_id=${b.id}` }))
  t.equal(byOwner.total, 1)
  t.equal(byOwner.shops[0].name, 'z')
  for (const q of ['sort=price', 'limit=0', 'limit=101', 'offset=-1', 'owner_id=nope', 'colour=red']) {
    t.equal((await app.inject({ method: 'GET', url: `/v1/shops?${q}` })).statusCode, 422, q)
  }
  t.equal((await app.inject({ method: 'GET', url: '/v1/shops?limit=100' })).statusCode, 200)
})

t.test('GET /v1/shops/{shopId}: 404 ShopNotFound, 422 on a malformed id, ETag and 304', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const shop = await openShop(app, owner)
  const res = await app.inject({ method: 'GET', url: `/v1/shops/${shop.id}` })
  t.equal(res.statusCode, 200)
  t.ok(res.headers.etag)
  const cached = await app.inject({ method: 'GET', url: `/v1/shops/${shop.id}`, headers: { 'if-none-match': res.headers.etag as string } })
  t.equal(cached.statusCode, 304)
  const missing = await app.inject({ method: 'GET', url: `/v1/shops/${randomUUID()}` })
  t.equal(missing.statusCode, 404)
  t.equal(json(missing).code, 'ShopNotFound')
  t.equal((await app.inject({ method: 'GET', url: '/v1/shops/not-a-uuid' })).statusCode, 422)
})

t.test('PUT /v1/shops/{shopId}: owner only, replaces fields, If-Match', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const shop = await openShop(app, owner, { name: 'Old', description: 'd' })
  const url = `/v1/shops/${shop.id}`
  t.equal((await app.inject({ method: 'PUT', url, payload: { name: 'x' } })).statusCode, 401)
  const notOwner = await app.inject({ method: 'PUT', url, headers: other.headers, payload: { name: 'x' } })
  t.equal(notOwner.statusCode, 403)
  t.equal(json(notOwner).code, 'UserNotOwner')
  const missing = await app.inject({ method: 'PUT', url: `/v1/shops/${randomUUID()}`, headers: owner.headers, payload: { name: 'x' } })
  t.equal(json(missing).code, 'ShopNotFound')
  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string
  const stale = await app.inject({ method: 'PUT', url, headers: { ...owner.headers, 'if-match': '"stale"' }, payload: { name: 'x' } })
  t.equal(stale.statusCode, 412)
  t.equal(json(await app.inject({ method: 'GET', url })).name, 'Old', 'a 412 changes nothing')
  const ok = await app.inject({ method: 'PUT', url, headers: { ...owner.headers, 'if-match': etag }, payload: { name: 'New' } })
  t.equal(ok.statusCode, 200)
  t.equal(json(ok).name, 'New')
  t.equal(json(ok).description, null, 'PUT replaces: a missing description is cleared')
  t.not(ok.headers.etag, etag)
  t.equal((await app.inject({ method: 'PUT', url, headers: owner.headers, payload: { name: 'x', owner_id: other.id } })).statusCode, 422)
  await app.db.updateTable('user').set({ is_active: false }).where('id', '=', owner.id).execute()
  const banned = await app.inject({ method: 'PUT', url, headers: owner.headers, payload: { name: 'x' } })
  t.equal(json(banned).code, 'UserIsBanned')
})

t.test('DELETE /v1/shops/{shopId}: owner only, If-Match, 204, products go too', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const banned = await createCreator(app, { active: false })
  const shop = await openShop(app, owner)
  const product = await addProduct(app, owner, shop.id, { name: 'p', price_cents: 1, currency: 'EUR' })
  const url = `/v1/shops/${shop.id}`
  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: other.headers })).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: banned.headers })).code, 'UserIsBanned')
  t.equal((await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': '"stale"' } })).statusCode, 412)
  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string
  const res = await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': etag } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: `${url}/products/${product.id}` })).statusCode, 404)
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: owner.headers })).code, 'ShopNotFound')
})

t.test('POST /v1/shops/{shopId}/products: shop owner only, validation of price and currency', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const banned = await createCreator(app, { active: false })
  const shop = await openShop(app, owner)
  const url = `/v1/shops/${shop.id}/products`
  const body = { name: 'LP', price_cents: 2500, currency: 'EUR' }
  t.equal((await app.inject({ method: 'POST', url, payload: body })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'POST', url, headers: other.headers, payload: body })).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'POST', url, headers: banned.headers, payload: body })).code, 'UserIsBanned')
  const missing = await app.inject({ method: 'POST', url: `/v1/shops/${randomUUID()}/products`, headers: owner.headers, payload: body })
  t.equal(json(missing).code, 'ShopNotFound')
  const res = await app.inject({ method: 'POST', url, headers: owner.headers, payload: body })
  t.equal(res.statusCode, 201)
  const product = json(res)
  t.equal(res.headers.location, `${url}/${product.id}`)
  t.match(product, { shop_id: shop.id, name: 'LP', description: null, price_cents: 2500, currency: 'EUR' })
  t.equal((await app.inject({ method: 'POST', url, headers: owner.headers, payload: { ...body, price_cents: 0 } })).statusCode, 201)
  t.equal((await app.inject({ method: 'POST', url, headers: owner.headers, payload: { ...body, price_cents: 999_999_999_999 } })).statusCode, 201)
  for (const bad of [{ price_cents: -1 }, { price_cents: 1.5 }, { price_cents: '10' }, { price_cents: 1_000_000_000_000 },
    { currency: 'eur' }, { currency: 'EURO' }, { currency: 'ABC' }, { currency: 'XXX' }, { name: '' }]) {
    const r = await app.inject({ method: 'POST', url, headers: owner.headers, payload: { ...body, ...bad } })
    t.equal(r.statusCode, 422, JSON.stringify(bad))
  }
  const noCurrency = await app.inject({ method: 'POST', url, headers: owner.headers, payload: { name: 'x', price_cents: 1 } })
  t.equal(json(noCurrency).errors[0].field, '/currency')
})

t.test('POST /v1/shops/{shopId}/products honours Idempotency-Key', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const shop = await openShop(app, owner)
  await checkReplay(t, app, `/v1/shops/${shop.id}/products`, owner, { name: 'LP', price_cents: 2500, currency: 'EUR' })
})

t.test('GET /v1/shops/{shopId}/products: filters by currency and price range, sorts, pages', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const shop = await openShop(app, owner)
  const other = await openShop(app, owner, { name: 'other' })
  await addProduct(app, owner, other.id, { name: 'elsewhere', price_cents: 100, currency: 'EUR' })
  for (const [name, price, currency] of [['a', 100, 'EUR'], ['b', 500, 'USD'], ['c', 1000, 'EUR'], ['d', 0, 'JPY']] as const) {
    await addProduct(app, owner, shop.id, { name, price_cents: price, currency })
  }
  const url = `/v1/shops/${shop.id}/products`
  const names = async (q: string) => {
    const res = await app.inject({ method: 'GET', url: `${url}?${q}` })
    t.equal(res.statusCode, 200, q)
    return { names: json(res).products.map((p: any) => p.name), total: json(res).total, link: res.headers.link }
  }
  t.same((await names('sort=name')).names, ['a', 'b', 'c', 'd'])
  t.same((await names('currency=EUR&sort=name')).names, ['a', 'c'])
  t.same((await names('min_price_cents=100&sort=price_cents')).names, ['a', 'b', 'c'])
  t.same((await names('max_price_cents=500&sort=-price_cents')).names, ['b', 'a', 'd'])
  t.same((await names('min_price_cents=100&max_price_cents=500&sort=name')).names, ['a', 'b'])
  const paged = await names('sort=price_cents&limit=2&offset=1')
  t.same(paged.names, ['a', 'b'])
  t.equal(paged.total, 4)
  t.match(paged.link, /rel="prev"/)
  t.match(paged.link, /rel="next"/)
  t.same((await names('max_price_cents=999999999999&sort=name')).names.length > 0, true, 'the price ceiling is accepted as a filter')
  for (const q of ['currency=eur', 'min_price_cents=-1', 'sort=currency', 'price=1', 'min_price_cents=1000000000000', 'max_price_cents=1e308']) {
    t.equal((await app.inject({ method: 'GET', url: `${url}?${q}` })).statusCode, 422, q)
  }
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/shops/${randomUUID()}/products` })).code, 'ShopNotFound')
})

t.test('GET /v1/shops/{shopId}/products/{productId}: under another shop is 404; ETag and 304', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const shop = await openShop(app, owner)
  const other = await openShop(app, owner, { name: 'other' })
  const product = await addProduct(app, owner, shop.id, { name: 'p', price_cents: 1, currency: 'EUR' })
  const res = await app.inject({ method: 'GET', url: `/v1/shops/${shop.id}/products/${product.id}` })
  t.equal(res.statusCode, 200)
  t.same(json(res), product)
  const cached = await app.inject({ method: 'GET', url: `/v1/shops/${shop.id}/products/${product.id}`, headers: { 'if-none-match': res.headers.etag as string } })
  t.equal(cached.statusCode, 304)
  const wrong = await app.inject({ method: 'GET', url: `/v1/shops/${other.id}/products/${product.id}` })
  t.equal(wrong.statusCode, 404)
  t.equal(json(wrong).code, 'ProductNotFound')
  const gone = await app.inject({ method: 'GET', url: `/v1/shops/${randomUUID()}/products/${product.id}` })
  t.equal(gone.statusCode, 404)
})

t.test('PUT and DELETE /v1/shops/{shopId}/products/{productId}: shop owner, If-Match, wrong shop 404', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const banned = await createCreator(app, { active: false })
  const shop = await openShop(app, owner)
  const otherShop = await openShop(app, other)
  const product = await addProduct(app, owner, shop.id, { name: 'p', description: 'd', price_cents: 1, currency: 'EUR' })
  const url = `/v1/shops/${shop.id}/products/${product.id}`
  const body = { name: 'q', price_cents: 2, currency: 'GBP' }
  t.equal((await app.inject({ method: 'PUT', url, payload: body })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'PUT', url, headers: other.headers, payload: body })).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'PUT', url, headers: banned.headers, payload: body })).code, 'UserIsBanned')
  const wrongShop = await app.inject({ method: 'PUT', url: `/v1/shops/${otherShop.id}/products/${product.id}`, headers: other.headers, payload: body })
  t.equal(json(wrongShop).code, 'ProductNotFound')
  t.equal((await app.inject({ method: 'PUT', url, headers: { ...owner.headers, 'if-match': '"stale"' }, payload: body })).statusCode, 412)
  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string
  const put = await app.inject({ method: 'PUT', url, headers: { ...owner.headers, 'if-match': etag }, payload: body })
  t.equal(put.statusCode, 200)
  t.match(json(put), { name: 'q', description: null, price_cents: 2, currency: 'GBP' })

  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 401)
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: other.headers })).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: banned.headers })).code, 'UserIsBanned')
  t.equal(json(await app.inject({ method: 'DELETE', url: `/v1/shops/${otherShop.id}/products/${product.id}`, headers: other.headers })).code, 'ProductNotFound')
  t.equal((await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': etag } })).statusCode, 412, 'the PUT changed the ETag')
  const del = await app.inject({ method: 'DELETE', url, headers: { ...owner.headers, 'if-match': put.headers.etag as string } })
  t.equal(del.statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 404)
})
