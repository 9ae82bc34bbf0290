import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { build, json } from '../../helper.js'
import { createCreator, createUser, type TestUser } from '../../fixtures.js'
import { MEDIA, createPost } from '../../post-fixtures.js'

/**
 * PATCH on every resource that has a PUT: a JSON Merge Patch (RFC 7396) of the writable fields,
 * with the PUT's ownership, If-Match, rules and answers. Each resource below is driven through
 * the same checks; the rules that belong to one resource (slugs, media hosts) follow.
 */
const EVIL = 'https://evil.example/v1/media/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'
const MERGE_PATCH = 'application/merge-patch+json'

interface Resource {
  name: string
  /** makes one, every optional field set, owned by `owner`; answers its URL */
  create: (app: FastifyInstance, owner: TestUser) => Promise<string>
  /** the owner: a creator, or (profile) the user whose profile it is */
  owner: (app: FastifyInstance) => Promise<TestUser>
  /** one field changed by a PATCH */
  change: Record<string, unknown>
  /** an optional field and what a null PATCH leaves in it (none: the resource has no optional field) */
  clears?: { field: string; to: unknown }
  /** a field a PUT requires: null is 422 */
  required: string
  /** a PUT body with the required fields only: the optional ones are cleared */
  put: Record<string, unknown>
  /** the optional fields that PUT body clears, with their cleared values */
  putClears: Record<string, unknown>
  /** whether another user can be refused (403): /profiles/me is always the caller's own */
  owned: boolean
}

async function newShop (app: FastifyInstance, owner: TestUser) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/shops',
    headers: owner.headers,
    payload: { name: 'Engine Parts', description: 'Brass gears.' }
  })
  if (res.statusCode !== 201) throw new Error(`shop: ${res.statusCode} ${res.body}`)
  return json(res)
}

const resources: Resource[] = [
  {
    name: 'post',
    owner: app => createCreator(app),
    create: async (app, owner) =>
      `/v1/posts/${(await createPost(app, owner, { title: 'First title', body: 'Some text.', tags: ['a', 'b'], media_url: MEDIA })).id}`,
    change: { title: 'Second title' },
    clears: { field: 'media_url', to: null },
    required: 'title',
    put: { type: 'ARTICLE', title: 'Put title' },
    putClears: { body: '', tags: [], media_url: null },
    owned: true
  },
  {
    name: 'comment',
    owner: app => createCreator(app),
    create: async (app, owner) => {
      const post = await createPost(app, owner)
      const res = await app.inject({
        method: 'POST',
        url: `/v1/posts/${post.id}/comments`,
        headers: owner.headers,
        payload: { text: 'First words.' }
      })
      return `/v1/posts/${post.id}/comments/${json(res).id}`
    },
    change: { text: 'Second words.' },
    required: 'text',
    put: { text: 'Put words.' },
    putClears: {},
    owned: true
  },
  {
    name: 'profile',
    owner: app => createUser(app),
    create: async (app, owner) => {
      const res = await app.inject({
        method: 'PUT',
        url: '/v1/profiles/me',
        headers: owner.headers,
        payload: { first_name: 'Ada', last_name: 'Lovelace', age: 36, favorite_band: 'Queen', website: 'https://ada.example.com', avatar_url: MEDIA }
      })
      if (res.statusCode !== 200) throw new Error(`profile: ${res.statusCode} ${res.body}`)
      return '/v1/profiles/me'
    },
    change: { favorite_band: 'Pink Floyd' },
    clears: { field: 'last_name', to: null },
    required: 'first_name',
    put: { first_name: 'Grace' },
    putClears: { last_name: null, age: null, favorite_band: null, website: null, avatar_url: null },
    owned: false
  },
  {
    name: 'shop',
    owner: app => createCreator(app),
    create: async (app, owner) => `/v1/shops/${(await newShop(app, owner)).id}`,
    change: { name: 'Engine Parts Ltd' },
    clears: { field: 'description', to: null },
    required: 'name',
    put: { name: 'Put Parts' },
    putClears: { description: null },
    owned: true
  },
  {
    name: 'product',
    owner: app => createCreator(app),
    create: async (app, owner) => {
      const shop = await newShop(app, owner)
      const res = await app.inject({
        method: 'POST',
        url: `/v1/shops/${shop.id}/products`,
        headers: owner.headers,
        payload: { name: 'Operation cards', description: 'Hand-punched.', price_cents: 2500, currency: 'GBP' }
      })
      return `/v1/shops/${shop.id}/products/${json(res).id}`
    },
    change: { price_cents: 2600 },
    clears: { field: 'description', to: null },
    required: 'currency',
    put: { name: 'Put cards', price_cents: 100, currency: 'EUR' },
    putClears: { description: null },
    owned: true
  }
]

/** The resource as its owner reads it now, with its ETag. */
async function read (app: FastifyInstance, url: string, owner: TestUser) {
  const res = await app.inject({ method: 'GET', url, headers: owner.headers })
  return { body: json(res), etag: String(res.headers.etag) }
}

function patch (
  app: FastifyInstance,
  url: string,
  user: TestUser | undefined,
  payload: unknown,
  headers: Record<string, string> = {}
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'PATCH',
    url,
    headers: { ...user?.headers, 'content-type': MERGE_PATCH, ...headers },
    payload: JSON.stringify(payload)
  })
}

/** The fields of `body` other than the ones named and the times a change moves. */
function rest (body: Record<string, unknown>, ...changed: string[]) {
  return Object.fromEntries(Object.entries(body).filter(([k]) => !changed.includes(k) && k !== 'updated_at'))
}

async function unchanged (t: Test, app: FastifyInstance, url: string, owner: TestUser, before: { body: unknown; etag: string }, why: string) {
  const now = await read(app, url, owner)
  t.same(now.body, before.body, `${why}: nothing written`)
  t.equal(now.etag, before.etag, `${why}: the ETag is the same`)
}

for (const r of resources) {
  t.test(`PATCH ${r.name}: one field changes, the others are kept; the answer and its ETag are a GET's`, async t => {
    const app = await build(t)
    const owner = await r.owner(app)
    const url = await r.create(app, owner)
    const before = await read(app, url, owner)
    const res = await patch(app, url, owner, r.change)
    t.equal(res.statusCode, 200, res.body)
    const after = json(res)
    t.match(after, r.change, 'the patched field changed')
    t.same(rest(after, ...Object.keys(r.change)), rest(before.body, ...Object.keys(r.change)), 'every other field is kept')
    const got = await read(app, url, owner)
    t.same(got.body, after, 'what is stored is what PATCH answered')
    t.equal(res.headers.etag, got.etag, 'PATCH answers the ETag a GET gives')
    t.not(got.etag, before.etag)
  })

  t.test(`PATCH ${r.name}: both media types are taken; a JSON Patch is 415 naming the two`, async t => {
    const app = await build(t)
    const owner = await r.owner(app)
    const url = await r.create(app, owner)
    for (const type of [
      'application/merge-patch+json',
      'application/merge-patch+json; charset=utf-8',
      'Application/Merge-Patch+JSON',
      'application/json',
      'application/json; charset=utf-8'
    ]) {
      const res = await patch(app, url, owner, r.change, { 'content-type': type })
      t.equal(res.statusCode, 200, `${type}: taken`)
    }
    const before = await read(app, url, owner)
    const field = Object.keys(r.change)[0]
    const jsonPatch = await app.inject({
      method: 'PATCH',
      url,
      headers: { ...owner.headers, 'content-type': 'application/json-patch+json' },
      payload: JSON.stringify([{ op: 'replace', path: `/${field}`, value: r.change[field] }])
    })
    t.equal(jsonPatch.statusCode, 415)
    t.equal(json(jsonPatch).code, 'UnsupportedMediaType')
    t.match(json(jsonPatch).detail, /application\/merge-patch\+json or application\/json/, 'the detail names the types taken')
    t.equal(jsonPatch.headers['accept-patch'], 'application/merge-patch+json, application/json', 'and so does Accept-Patch (RFC 5789)')
    for (const type of [
      'text/plain',
      'application/merge-patch+json ;',
      'application/merge-patch+json; charset=latin1',
      'application/merge-patch+jsonx'
    ]) {
      const res = await patch(app, url, owner, r.change, { 'content-type': type })
      t.equal(res.statusCode, 415, `${JSON.stringify(type)}: refused`)
    }
    await unchanged(t, app, url, owner, before, 'refused media types')
  })

  t.test(`PATCH ${r.name}: null on the required ${r.required} is 422 with a clear message; a broken rule is 422; nothing written`, async t => {
    const app = await build(t)
    const owner = await r.owner(app)
    const url = await r.create(app, owner)
    const before = await read(app, url, owner)
    const res = await patch(app, url, owner, { ...r.change, [r.required]: null })
    t.equal(res.statusCode, 422)
    const problem = json(res)
    t.equal(problem.code, 'ValidationFailed')
    t.same(problem.errors, [{ in: 'body', field: `/${r.required}`, rule: 'type', message: 'is required: it may be changed, not cleared with null' }])
    t.equal(problem.detail, `/${r.required}: is required: it may be changed, not cleared with null`)
    const unknown = await patch(app, url, owner, { id: '7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10' })
    t.equal(unknown.statusCode, 422, 'an unknown member is refused')
    t.equal(json(unknown).errors[0].rule, 'additionalProperties')
    for (const body of [[], 'text', 1, null]) {
      const res = await patch(app, url, owner, body)
      t.equal(res.statusCode, 422, `a patch that is not an object (${JSON.stringify(body)}) is 422`)
    }
    await unchanged(t, app, url, owner, before, 'refused patches')
  })

  if (r.clears) {
    const { field, to } = r.clears
    t.test(`PATCH ${r.name}: null clears the optional ${field}`, async t => {
      const app = await build(t)
      const owner = await r.owner(app)
      const url = await r.create(app, owner)
      const before = await read(app, url, owner)
      t.not(before.body[field], to, `${field} is set to start with`)
      const res = await patch(app, url, owner, { [field]: null })
      t.equal(res.statusCode, 200, res.body)
      t.equal(json(res)[field], to, `${field} is cleared`)
      t.same(rest(json(res), field), rest(before.body, field), 'the others are kept')
    })
  }

  t.test(
    `PATCH ${r.name}: ${r.owned ? 'another user 403, ' : ''}no token 401, stale If-Match 412 and nothing written; a fresh If-Match works`,
    async t => {
      const app = await build(t)
      const owner = await r.owner(app)
      const url = await r.create(app, owner)
      const before = await read(app, url, owner)
      if (r.owned) {
        const other = await createCreator(app)
        const res = await patch(app, url, other, r.change)
        t.equal(res.statusCode, 403)
        t.equal(json(res).code, 'UserNotOwner')
      }
      const anonymous = await patch(app, url, undefined, r.change)
      t.equal(anonymous.statusCode, 401)
      t.equal(json(anonymous).code, 'NotAuthenticated')
      const stale = await patch(app, url, owner, r.change, { 'if-match': '"stale"' })
      t.equal(stale.statusCode, 412)
      t.equal(json(stale).code, 'PreconditionFailed')
      await unchanged(t, app, url, owner, before, '403, 401 and 412')
      const fresh = await patch(app, url, owner, r.change, { 'if-match': before.etag })
      t.equal(fresh.statusCode, 200, 'the ETag a GET gave is taken')
      t.match(json(fresh), r.change)
      const again = await patch(app, url, owner, r.change, { 'if-match': before.etag })
      t.equal(again.statusCode, 412, 'and is stale once the resource changed')
    }
  )

  t.test(`PUT ${r.name} still replaces: the optional fields it leaves out are cleared`, async t => {
    const app = await build(t)
    const owner = await r.owner(app)
    const url = await r.create(app, owner)
    const res = await app.inject({ method: 'PUT', url, headers: owner.headers, payload: r.put })
    t.equal(res.statusCode, 200, res.body)
    t.match(json(res), r.put)
    t.match(json(res), r.putClears)
    const partial = await app.inject({ method: 'PUT', url, headers: owner.headers, payload: r.change })
    if (Object.keys(r.put).length > 1) t.equal(partial.statusCode, 422, 'PUT with one field is still 422: it replaces')
  })
}

t.test('PATCH post: slug and published_at cleared with null; a merge that breaks a rule writes nothing', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const post = await createPost(app, creator, {
    title: 'Notes on the Engine',
    slug: 'own-slug',
    body: 'Text.',
    tags: ['a'],
    published_at: '2026-01-01T00:00:00Z'
  })
  const url = `/v1/posts/${post.id}`

  const title = json(await patch(app, url, creator, { title: 'Renamed notes' }))
  t.match(
    title,
    { title: 'Renamed notes', slug: 'own-slug', published_at: '2026-01-01T00:00:00+0000', body: 'Text.', tags: ['a'] },
    'slug and published_at are kept like everything else'
  )
  const derived = json(await patch(app, url, creator, { slug: null }))
  t.equal(derived.slug, 'renamed-notes', 'a null slug is derived from the title again')
  const cleared = json(await patch(app, url, creator, { body: null, tags: null }))
  t.match(cleared, { body: '', tags: [] }, 'null clears body and tags')
  const tagRows = await app.db.selectFrom('post_tag').select('tag').where('post_id', '=', post.id).execute()
  t.same(tagRows, [], 'and the tag rows follow')
  const retagged = json(await patch(app, url, creator, { tags: ['X', 'y'] }))
  t.same(retagged.tags, ['x', 'y'], 'an array is replaced whole, normalised as on PUT')
  const draft = await patch(app, url, creator, { published_at: null })
  t.equal(json(draft).published_at, null, 'a null published_at makes a draft')
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 404, 'hidden from others again')

  await createPost(app, creator, { slug: 'taken' })
  const before = await read(app, url, creator)
  const clash = await patch(app, url, creator, { slug: 'taken', title: 'Lost title' })
  t.equal(clash.statusCode, 409)
  t.equal(json(clash).code, 'Conflict')
  t.match(json(clash).detail, /taken/)
  await unchanged(t, app, url, creator, before, 'a slug clash')
  const derivedClash = await patch(app, url, creator, { title: 'Taken', slug: null })
  t.equal(derivedClash.statusCode, 409, 'a derived slug that clashes too')
  await unchanged(t, app, url, creator, before, 'a derived slug clash')

  const badHost = await patch(app, url, creator, { media_url: EVIL })
  t.equal(badHost.statusCode, 422)
  t.same(
    json(badHost).errors.map((e: { field: string }) => e.field),
    ['/media_url']
  )
  await unchanged(t, app, url, creator, before, 'a media URL on another host')

  // a stored value the rules no longer allow (the allowed hosts changed): a PATCH of another field still meets it
  await app.db.updateTable('post').set({ media_url: EVIL }).where('id', '=', post.id).execute()
  const stored = await read(app, url, creator)
  const merged = await patch(app, url, creator, { title: 'Only the title' })
  t.equal(merged.statusCode, 422, 'the merged post must pass the PUT rules')
  t.match(json(merged), { code: 'ValidationFailed', detail: /^the merged fields break a rule: \/media_url: / })
  t.same(
    json(merged).errors.map((e: { field: string }) => e.field),
    ['/media_url']
  )
  await unchanged(t, app, url, creator, stored, 'a merge that breaks a rule')
  const fixed = await patch(app, url, creator, { title: 'Only the title', media_url: null })
  t.equal(fixed.statusCode, 200, 'clearing the bad value in the same patch passes')
})

t.test('PATCH /v1/profiles/me: null clears each optional field; a bad avatar host is 422; username and e-mail are not writable', async t => {
  const app = await build(t)
  const user = await createUser(app)
  await resources[2].create(app, user)
  const url = '/v1/profiles/me'
  const before = await read(app, url, user)
  const res = await patch(app, url, user, { last_name: null, age: null, favorite_band: null, website: null, avatar_url: null })
  t.equal(res.statusCode, 200)
  t.match(json(res), {
    first_name: 'Ada',
    last_name: null,
    age: null,
    favorite_band: null,
    website: null,
    avatar_url: null,
    username: before.body.username,
    email: before.body.email
  })
  const after = await read(app, url, user)
  for (const body of [{ avatar_url: EVIL }, { username: 'mallory' }, { email: 'm@example.com' }, { age: 17 }, { favorite_band: 'Nobody' }]) {
    const refused = await patch(app, url, user, body)
    t.equal(refused.statusCode, 422, `${JSON.stringify(body)}: 422`)
  }
  await unchanged(t, app, url, user, after, 'refused profile patches')
})

t.test('PATCH product: each member keeps its PUT rule; null on price_cents or name is 422', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const url = await resources[4].create(app, owner)
  const before = await read(app, url, owner)
  for (const body of [{ currency: 'XXX' }, { price_cents: -1 }, { price_cents: 1.5 }, { name: '' }, { price_cents: null }, { name: null }]) {
    const res = await patch(app, url, owner, body)
    t.equal(res.statusCode, 422, `${JSON.stringify(body)}: 422`)
  }
  await unchanged(t, app, url, owner, before, 'refused product patches')
  const res = await patch(app, url, owner, { currency: 'EUR', description: null })
  t.match(json(res), { name: 'Operation cards', price_cents: 2500, currency: 'EUR', description: null })
})

t.test('PATCH on a path without PUT is 405; merge-patch+json is refused where no PATCH is', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const post = await createPost(app, creator)
  const reviews = await app.inject({
    method: 'PATCH',
    url: `/v1/posts/${post.id}/reviews`,
    headers: { ...creator.headers, 'content-type': 'application/json' },
    payload: '{}'
  })
  t.equal(reviews.statusCode, 405)
  const create = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: { ...creator.headers, 'content-type': MERGE_PATCH },
    payload: JSON.stringify({ type: 'ARTICLE', title: 'x' })
  })
  t.equal(create.statusCode, 415, 'POST takes application/json only')
  t.match(json(create).detail, /^Content-Type must be application\/json$/)
})

t.test('PATCH: a merge patch body with a __proto__ member is refused, as JSON bodies are', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const post = await createPost(app, creator)
  const res = await app.inject({
    method: 'PATCH',
    url: `/v1/posts/${post.id}`,
    headers: { ...creator.headers, 'content-type': MERGE_PATCH },
    payload: '{"title":"x","__proto__":{"polluted":true}}'
  })
  t.equal(res.statusCode, 400)
  t.equal(json(res).code, 'MalformedBody')
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})
