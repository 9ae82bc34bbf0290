import type { FastifyInstance, InjectOptions } from 'fastify'
import t from 'tap'
import { build, dialect, json, recordStatements } from './helper.js'
import { createCreator, createUser, type TestUser } from './fixtures.js'
import { createPost, MISSING } from './post-fixtures.js'
import { PATCH, refusedWritingNothing, state } from './update-checks.js'
import { revokeCreator } from '../src/domain/users.js'

/**
 * Reviews, shops and products are updated as posts and comments are (test/update-refusals.test.ts):
 * read, checked, written only where the row is still as read. Every refusal answers its problem
 * and writes nothing, and concurrent merge patches of different fields each land on the row the
 * others left. Twins with one If-Match: test/conditional-writes.test.ts.
 */

async function created (app: FastifyInstance, owner: TestUser, url: string, payload: object) {
  const res = await app.inject({ method: 'POST', url, headers: owner.headers, payload })
  if (res.statusCode !== 201) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
  return json(res)
}

const reviewOf = async (app: FastifyInstance, author: TestUser, postId: string) =>
  `/v1/posts/${postId}/reviews/${(await created(app, author, `/v1/posts/${postId}/reviews`, { rating: 3, text: 'first' })).id}`
const shopOf = async (app: FastifyInstance, owner: TestUser) =>
  `/v1/shops/${(await created(app, owner, '/v1/shops', { name: 'Records', description: 'vinyl' })).id}`
const productIn = async (app: FastifyInstance, owner: TestUser, shopUrl: string) =>
  `${shopUrl}/products/${(await created(app, owner, `${shopUrl}/products`, { name: 'LP', price_cents: 1500, currency: 'EUR' })).id}`

/** The refusals of `url` every update shares: another user (403), a stale If-Match (412), a required field cleared (422). */
function sharedCases (owner: TestUser, other: TestUser, put: object, patch: object, cleared: object): Array<[string, InjectOptions, [number, string]]> {
  const stale = { ...owner.headers, 'if-match': '"stale"' }
  return [
    ['PUT by another user', { method: 'PUT', headers: other.headers, payload: put }, [403, 'UserNotOwner']],
    ['PATCH by another user', { method: 'PATCH', headers: { ...other.headers, ...PATCH }, payload: patch }, [403, 'UserNotOwner']],
    ['PUT with a stale If-Match', { method: 'PUT', headers: stale, payload: put }, [412, 'PreconditionFailed']],
    ['PATCH with a stale If-Match', { method: 'PATCH', headers: { ...stale, ...PATCH }, payload: patch }, [412, 'PreconditionFailed']],
    ['PATCH clearing a required field', { method: 'PATCH', headers: { ...owner.headers, ...PATCH }, payload: cleared }, [422, 'ValidationFailed']]
  ]
}

t.test('a review update refused for any reason writes nothing; its 404s come as GET gives them', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const author = await createCreator(app)
  const other = await createUser(app)
  const post = await createPost(app, creator)
  const url = await reviewOf(app, author, post.id)
  const put = { rating: 5, text: 'x' }
  for (const [name, request, expected] of sharedCases(author, other, put, { text: 'x' }, { rating: null })) {
    await refusedWritingNothing(t, app, url, author, request, expected, `review: ${name}`)
  }
  const reviewId = url.split('/').pop()!

  // a stored value no rule allows any more: the merged review breaks the PUT rules (422) and nothing is written
  await app.db.updateTable('review').set({ rating: 9 }).where('id', '=', reviewId).execute()
  await refusedWritingNothing(t, app, url, author, { method: 'PATCH', headers: { ...author.headers, ...PATCH }, payload: { text: 'x' } },
    [422, 'ValidationFailed'], 'review: a merge that breaks a rule')
  await app.db.updateTable('review').set({ rating: 3 }).where('id', '=', reviewId).execute()

  const elsewhere = await createPost(app, creator)
  const moved = await app.inject({ method: 'PUT', url: `/v1/posts/${elsewhere.id}/reviews/${reviewId}`, headers: author.headers, payload: put })
  t.same([moved.statusCode, json(moved).code], [404, 'ResourceNotFound'], 'the review under another post: 404')
  const missing = await app.inject({ method: 'PUT', url: `/v1/posts/${post.id}/reviews/${MISSING}`, headers: author.headers, payload: put })
  t.same([missing.statusCode, json(missing).code], [404, 'ResourceNotFound'], 'a missing review: 404')
  const noPost = await app.inject({ method: 'PUT', url: `/v1/posts/${MISSING}/reviews/${reviewId}`, headers: author.headers, payload: put })
  t.same([noPost.statusCode, json(noPost).code], [404, 'PostNotFound'], 'under a missing post: the post\'s 404')
  t.equal((await state(app, url, author)).body.text, 'first', 'and it is unchanged')

  // the author's review on the author's own draft: another user sees no post, so the post's 404 comes before the owner's 403
  const draft = await createPost(app, author, { published_at: null })
  const draftUrl = await reviewOf(app, author, draft.id)
  await refusedWritingNothing(t, app, draftUrl, author, { method: 'PUT', headers: other.headers, payload: put },
    [404, 'PostNotFound'], "review: on another's draft")
  const missingOnDraft = await app.inject({ method: 'PUT', url: `/v1/posts/${draft.id}/reviews/${MISSING}`, headers: other.headers, payload: put })
  t.same([missingOnDraft.statusCode, json(missingOnDraft).code], [404, 'PostNotFound'], "a missing review on another's draft: the post's 404 first")

  // the post taken back to a draft after the review: its author no longer sees it
  await app.db.updateTable('post').set({ published_at: null }).where('id', '=', post.id).execute()
  const hidden = await app.inject({ method: 'PUT', url, headers: author.headers, payload: put })
  t.same([hidden.statusCode, json(hidden).code], [404, 'PostNotFound'], 'a review of a post now hidden: the post\'s 404')
  t.equal((await state(app, url, creator)).body.text, 'first', 'and it is unchanged')
})

t.test('a shop update refused for any reason writes nothing', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const url = await shopOf(app, owner)
  const put = { name: 'Changed' }
  for (const [name, request, expected] of sharedCases(owner, other, put, { description: 'x' }, { name: null })) {
    await refusedWritingNothing(t, app, url, owner, request, expected, `shop: ${name}`)
  }
  const shopId = url.split('/').pop()!
  await app.db.updateTable('shop').set({ name: '' }).where('id', '=', shopId).execute()
  await refusedWritingNothing(t, app, url, owner, { method: 'PATCH', headers: { ...owner.headers, ...PATCH }, payload: { description: 'x' } },
    [422, 'ValidationFailed'], 'shop: a merge that breaks a rule')
  await app.db.updateTable('shop').set({ name: 'Records' }).where('id', '=', shopId).execute()

  const missing = await app.inject({ method: 'PUT', url: `/v1/shops/${MISSING}`, headers: other.headers, payload: put })
  t.same([missing.statusCode, json(missing).code], [404, 'ShopNotFound'], 'a missing shop: 404, before any owner check')

  await revokeCreator(app.db, owner.username)
  await refusedWritingNothing(t, app, url, owner, { method: 'PUT', headers: owner.headers, payload: put },
    [403, 'UserNotCreator'], 'shop: a revoked creator')
})

t.test('a product update refused for any reason writes nothing; its 404s come as GET gives them', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app)
  const shopUrl = await shopOf(app, owner)
  const url = await productIn(app, owner, shopUrl)
  const put = { name: 'Changed', price_cents: 1, currency: 'USD' }
  for (const [name, request, expected] of sharedCases(owner, other, put, { price_cents: 2 }, { currency: null })) {
    await refusedWritingNothing(t, app, url, owner, request, expected, `product: ${name}`)
  }
  const productId = url.split('/').pop()!
  await app.db.updateTable('product').set({ currency: 'XXX' }).where('id', '=', productId).execute()
  await refusedWritingNothing(t, app, url, owner, { method: 'PATCH', headers: { ...owner.headers, ...PATCH }, payload: { name: 'x' } },
    [422, 'ValidationFailed'], 'product: a merge that breaks a rule')
  await app.db.updateTable('product').set({ currency: 'EUR' }).where('id', '=', productId).execute()

  // GET reads the product under its shop alone (a missing shop: ProductNotFound); a change answers for the shop first, as it always has
  const otherShop = await shopOf(app, owner)
  const cases: Array<[string, string, TestUser, string, string]> = [
    ['the product under another shop', `${otherShop}/products/${productId}`, owner, 'ProductNotFound', 'ProductNotFound'],
    ['a missing product', `${shopUrl}/products/${MISSING}`, owner, 'ProductNotFound', 'ProductNotFound'],
    ['a missing product, by another user', `${shopUrl}/products/${MISSING}`, other, 'ProductNotFound', 'ProductNotFound'],
    ['the product under a missing shop', `/v1/shops/${MISSING}/products/${productId}`, owner, 'ProductNotFound', 'ShopNotFound'],
    ['a missing product under a missing shop, by another user', `/v1/shops/${MISSING}/products/${MISSING}`, other, 'ProductNotFound', 'ShopNotFound']
  ]
  for (const [name, to, by, onGet, onPut] of cases) {
    const got = await app.inject({ method: 'GET', url: to })
    t.same([got.statusCode, json(got).code], [404, onGet], `${name}: GET 404 ${onGet}`)
    for (const method of ['PUT', 'PATCH'] as const) {
      const headers = method === 'PATCH' ? { ...by.headers, ...PATCH } : by.headers
      const res = await app.inject({ method, url: to, headers, payload: method === 'PATCH' ? { name: 'x' } : put })
      t.same([res.statusCode, json(res).code], [404, onPut], `${name}: ${method} 404 ${onPut}`)
    }
  }
  t.equal((await state(app, url, owner)).body.name, 'LP', 'and it is unchanged')

  await revokeCreator(app.db, owner.username)
  await refusedWritingNothing(t, app, url, owner, { method: 'PUT', headers: owner.headers, payload: put },
    [403, 'UserNotCreator'], 'product: a revoked creator')
})

interface Target {
  name: string
  /** the resource's URL, made with `owner` as its owner */
  create: (app: FastifyInstance, owner: TestUser) => Promise<string>
  body: (n: number) => object
  /** merge patches of different fields, and what the resource holds once all have landed */
  patches: (round: number) => object[]
  merged: (round: number) => object
}

const targets: Target[] = [
  {
    name: 'review',
    create: async (app, owner) => reviewOf(app, owner, (await createPost(app, await createCreator(app))).id),
    body: n => ({ rating: 1 + (n % 5), text: `twin ${n}` }),
    patches: round => [{ rating: 1 + round }, { text: `text ${round}` }],
    merged: round => ({ rating: 1 + round, text: `text ${round}` })
  },
  {
    name: 'shop',
    create: shopOf,
    body: n => ({ name: `Twin ${n}` }),
    patches: round => [{ name: `Shop ${round}` }, { description: `about ${round}` }],
    merged: round => ({ name: `Shop ${round}`, description: `about ${round}` })
  },
  {
    name: 'product',
    create: async (app, owner) => productIn(app, owner, await shopOf(app, owner)),
    body: n => ({ name: `Twin ${n}`, price_cents: n, currency: 'EUR' }),
    patches: round => [{ name: `Product ${round}` }, { description: `about ${round}` }, { price_cents: 100 * round }, { currency: 'JPY' }],
    merged: round => ({ name: `Product ${round}`, description: `about ${round}`, price_cents: 100 * round, currency: 'JPY' })
  }
]

for (const target of targets) {
  t.test(`${target.name}: concurrent merge patches of different fields, without If-Match, all land`, async t => {
    const app = await build(t)
    const owner = await createCreator(app)
    for (let round = 1; round <= 4; round++) {
      const url = await target.create(app, owner)
      const patches = target.patches(round)
      const answers = await Promise.all(patches.map(payload => app.inject({ method: 'PATCH', url, headers: { ...owner.headers, ...PATCH }, payload })))
      t.same(answers.map(a => a.statusCode), patches.map(() => 200), `round ${round}: every PATCH 200`)
      t.match((await state(app, url, owner)).body, target.merged(round), `round ${round}: every field changed`)
    }
  })
}

t.test('an update is the account read, the read and one write; PostgreSQL opens no transaction for it', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const review = await reviewOf(app, owner, (await createPost(app, await createCreator(app))).id)
  const shop = await shopOf(app, owner)
  const product = await productIn(app, owner, shop)
  const statements = recordStatements(t, app)
  const requests: Array<[string, InjectOptions]> = [
    ['PUT review', { method: 'PUT', url: review, headers: owner.headers, payload: { rating: 4, text: 'x' } }],
    ['PATCH review', { method: 'PATCH', url: review, headers: { ...owner.headers, ...PATCH }, payload: { text: 'y' } }],
    ['PUT shop', { method: 'PUT', url: shop, headers: owner.headers, payload: { name: 'New' } }],
    ['PATCH shop', { method: 'PATCH', url: shop, headers: { ...owner.headers, ...PATCH }, payload: { description: 'd' } }],
    ['PUT product', { method: 'PUT', url: product, headers: owner.headers, payload: { name: 'New', price_cents: 1, currency: 'USD' } }],
    ['PATCH product', { method: 'PATCH', url: product, headers: { ...owner.headers, ...PATCH }, payload: { price_cents: 2 } }]
  ]
  for (const [name, request] of requests) {
    statements.length = 0
    t.equal((await app.inject(request)).statusCode, 200, name)
    const verbs = statements.map(sql => sql.split(' ')[0].toLowerCase())
    if (dialect === 'postgres') {
      t.same(verbs, ['select', 'select', 'with'], `${name}: 3 statements, the last the write (${verbs.join(' ')})`)
    } else {
      t.same([verbs[1], verbs.at(-1)], ['begin', 'commit'], `${name}: SQLite reads and writes in one transaction`)
    }
  }
})
