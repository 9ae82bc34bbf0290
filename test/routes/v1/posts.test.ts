import { createHash } from 'node:crypto'
import t from 'tap'
import { build, json } from '../../helper.js'
import { createCreator, createUser } from '../../fixtures.js'
import { MEDIA, MISSING, backdate, checkListBounds, createPost } from '../../post-fixtures.js'

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/

t.test('POST /v1/posts creates a post: 201, Location, the Post shape, derived slug, normalised tags', async t => {
  const app = await build(t)
  const creator = await createCreator(app, { firstName: 'Ada', lastName: 'Lovelace' })
  const res = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: creator.headers,
    payload: { title: 'Über Café: Notes!', type: 'COURSE', body: 'Hello', tags: ['Rust', 'rust', 'api'], media_url: MEDIA }
  })
  t.equal(res.statusCode, 201)
  const post = json(res)
  t.equal(res.headers.location, `/v1/posts/${post.id}`)
  t.match(post, {
    type: 'COURSE',
    slug: 'uber-cafe-notes',
    title: 'Über Café: Notes!',
    body: 'Hello',
    word_count: 1,
    tags: ['rust', 'api'],
    media_url: MEDIA,
    creator: { id: creator.id, username: creator.username, first_name: 'Ada', last_name: 'Lovelace' }
  })
  t.same(Object.keys(post).sort(), [
    'body',
    'created_at',
    'creator',
    'id',
    'media_url',
    'published_at',
    'slug',
    'tags',
    'title',
    'type',
    'updated_at',
    'word_count'
  ])
  t.match(post.published_at, DATE_TIME, 'published now by default')
  t.equal(post.published_at, post.created_at)

  const got = await app.inject({ method: 'GET', url: res.headers.location as string })
  t.equal(got.statusCode, 200)
  t.same(json(got), post, 'the Location answers the created post')

  const minimal = await createPost(app, creator, { title: 'Only the required' })
  t.match(minimal, { slug: 'only-the-required', body: '', tags: [], media_url: null })
  const symbols = await createPost(app, creator, { title: '!!!' })
  t.equal(symbols.slug, 'post', 'a title without letters or digits gives the slug "post"')
})

t.test('POST /v1/posts validates the body (422) and keeps the bounds of tags', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const post = (payload: unknown) => app.inject({ method: 'POST', url: '/v1/posts', headers: creator.headers, payload: payload as object })
  const refused = async (payload: Record<string, unknown>, field: string, why: string) => {
    const res = await post(payload)
    t.equal(res.statusCode, 422, why)
    t.equal(json(res).code, 'ValidationFailed', why)
    t.ok(
      json(res).errors.some((e: { field: string }) => e.field === field),
      `${why}: names ${field}`
    )
    return res
  }
  await refused({ type: 'ARTICLE' }, '/title', 'title is required')
  await refused({ title: 'x' }, '/type', 'type is required')
  await refused({ title: 'x', type: 'VIDEO' }, '/type', 'type is ARTICLE or COURSE')
  await refused({ title: '', type: 'ARTICLE' }, '/title', 'an empty title')
  await refused({ title: 'x'.repeat(201), type: 'ARTICLE' }, '/title', 'a title over 200 characters')
  await refused({ title: 'x', type: 'ARTICLE', colour: 'red' }, '/colour', 'an unknown property')
  await refused({ title: 'x', type: 'ARTICLE', slug: 'Not A Slug' }, '/slug', 'a slug that is not kebab-case')
  await refused({ title: 'x', type: 'ARTICLE', tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, '/tags', '11 tags')
  await refused({ title: 'x', type: 'ARTICLE', tags: ['a'.repeat(33)] }, '/tags/0', 'a tag of 33 characters')
  await refused({ title: 'x', type: 'ARTICLE', tags: ['a,b'] }, '/tags/0', 'a tag with a comma')
  await refused({ title: 'x', type: 'ARTICLE', published_at: 'yesterday' }, '/published_at', 'a date-time that is not one')
  const host = await refused(
    { title: 'x', type: 'ARTICLE', media_url: 'https://evil.example.com/a.png' },
    '/media_url',
    'a media_url on another host'
  )
  t.equal(json(host).errors[0].message, 'files are to be uploaded only to internal services')

  const most = await post({ title: 'x'.repeat(200), type: 'ARTICLE', tags: Array.from({ length: 10 }, (_, i) => `${i}`.padEnd(32, 'a')) })
  t.equal(most.statusCode, 201, '10 tags of 32 characters and a 200-character title are accepted')

  const text = await app.inject({ method: 'POST', url: '/v1/posts', headers: { ...creator.headers, 'content-type': 'text/plain' }, payload: 'hi' })
  t.equal(text.statusCode, 415)
  const broken = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: { ...creator.headers, 'content-type': 'application/json' },
    payload: '{"title":'
  })
  t.equal(broken.statusCode, 400)
  t.equal(json(broken).code, 'MalformedBody')
})

t.test('POST /v1/posts: published_at default, explicit, future (scheduled) and null (draft)', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const past = await createPost(app, creator, { published_at: '2026-01-02T03:04:05.678+02:00' })
  t.equal(past.published_at, '2026-01-02T01:04:05+0000', 'an offset is moved to UTC and the fraction dropped')
  const compact = await createPost(app, creator, { published_at: '2026-01-02T03:04:05+0130' })
  t.equal(compact.published_at, '2026-01-02T01:34:05+0000', 'a colon-less offset is accepted')
  const draft = await createPost(app, creator, { published_at: null })
  t.equal(draft.published_at, null)
  const scheduled = await createPost(app, creator, { published_at: '2999-01-01T00:00:00Z' })
  t.equal(scheduled.published_at, '2999-01-01T00:00:00+0000')

  const stranger = await createUser(app)
  for (const hidden of [draft, scheduled]) {
    const anonymous = await app.inject({ method: 'GET', url: `/v1/posts/${hidden.id}` })
    t.equal(anonymous.statusCode, 404, 'hidden from readers without a token')
    t.equal(json(anonymous).code, 'PostNotFound')
    t.equal(
      (await app.inject({ method: 'GET', url: `/v1/posts/${hidden.id}`, headers: stranger.headers })).statusCode,
      404,
      'hidden from other users'
    )
    const own = await app.inject({ method: 'GET', url: `/v1/posts/${hidden.id}`, headers: creator.headers })
    t.equal(own.statusCode, 200, 'visible to its creator')
  }
  const list = json(await app.inject({ method: 'GET', url: '/v1/posts' }))
  t.equal(list.total, 2, 'the public list holds the published posts only')
  t.same(list.posts.map((p: { id: string }) => p.id).sort(), [past.id, compact.id].sort())
})

t.test('published_at: years 0001 to 9999 round-trip exactly (create, read, list, PUT); outside them 422', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const exact: Array<[string, string]> = [
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00+0000'],
    ['0001-01-01T00:00:00-01:00', '0001-01-01T01:00:00+0000'],
    ['0004-02-29T12:00:00Z', '0004-02-29T12:00:00+0000'],
    ['0099-12-31T23:59:59Z', '0099-12-31T23:59:59+0000'],
    ['0100-01-01T00:00:00Z', '0100-01-01T00:00:00+0000'],
    ['1999-12-31T23:59:59Z', '1999-12-31T23:59:59+0000'],
    ['9999-12-31T23:59:59Z', '9999-12-31T23:59:59+0000'],
    ['9999-12-31T23:59:59.999+00:00', '9999-12-31T23:59:59+0000']
  ]
  for (const [input, stored] of exact) {
    const post = await createPost(app, creator, { published_at: input })
    t.equal(post.published_at, stored, `${input}: the answer`)
    const read = json(await app.inject({ method: 'GET', url: `/v1/posts/${post.id}`, headers: creator.headers }))
    t.equal(read.published_at, stored, `${input}: read back from the database`)
    const put = await app.inject({
      method: 'PUT',
      url: `/v1/posts/${post.id}`,
      headers: creator.headers,
      payload: { title: post.title, type: 'ARTICLE', published_at: input }
    })
    t.equal(json(put).published_at, stored, `${input}: PUT`)
  }
  const mine = json(await app.inject({ method: 'GET', url: '/v1/users/me/posts?sort=published_at&limit=100', headers: creator.headers }))
  t.same(
    mine.posts.map((p: { published_at: string }) => p.published_at),
    exact.map(([, stored]) => stored),
    'and they sort by their true year'
  )

  // No year 0 (PostgreSQL has none) and nothing past 9999 in UTC (the output has four-digit years).
  for (const input of [
    '0000-01-01T00:00:00Z',
    '0000-12-31T23:59:59Z',
    '0001-01-01T00:00:00+00:01',
    '0001-01-01T00:59:59+01:00',
    '9999-12-31T23:59:59-00:01',
    '9999-12-31T23:00:00-01:00',
    '0100-02-29T00:00:00Z'
  ]) {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/posts',
      headers: creator.headers,
      payload: { title: 'x', type: 'ARTICLE', published_at: input }
    })
    t.equal(res.statusCode, 422, input)
    t.equal(json(res).errors[0].field, '/published_at', input)
  }
})

t.test('POST /v1/posts: authorisation and slug conflicts', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const payload = { title: 'Hello', type: 'ARTICLE' }
  const none = await app.inject({ method: 'POST', url: '/v1/posts', payload })
  t.equal(none.statusCode, 401)
  t.equal(json(none).code, 'NotAuthenticated')
  t.equal(none.headers['www-authenticate'], 'Bearer')
  const bad = await app.inject({ method: 'POST', url: '/v1/posts', headers: { authorization: 'Bearer a.b.c' }, payload })
  t.equal(json(bad).code, 'InvalidCredentials')
  const reader = await createUser(app)
  const notCreator = await app.inject({ method: 'POST', url: '/v1/posts', headers: reader.headers, payload })
  t.equal(notCreator.statusCode, 403)
  t.equal(json(notCreator).code, 'UserNotCreator')
  const banned = await createCreator(app, { active: false })
  const ban = await app.inject({ method: 'POST', url: '/v1/posts', headers: banned.headers, payload })
  t.equal(ban.statusCode, 403)
  t.equal(json(ban).code, 'UserIsBanned')
  t.equal(
    Number(
      (
        await app.db
          .selectFrom('post')
          .select(eb => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n
    ),
    0,
    'nothing was created'
  )

  await createPost(app, creator, { title: 'Hello' })
  const derived = await app.inject({ method: 'POST', url: '/v1/posts', headers: creator.headers, payload })
  t.equal(derived.statusCode, 409, 'the derived slug is taken')
  t.equal(json(derived).code, 'Conflict')
  const explicit = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: creator.headers,
    payload: { title: 'Other', type: 'ARTICLE', slug: 'hello' }
  })
  t.equal(explicit.statusCode, 409, 'the explicit slug is taken')
  const other = await createCreator(app)
  t.equal(
    (await app.inject({ method: 'POST', url: '/v1/posts', headers: other.headers, payload })).statusCode,
    201,
    'slugs are unique per creator only'
  )
  const tags = await app.db.selectFrom('post_tag').selectAll().execute()
  t.same(tags, [], 'a refused post leaves no tag rows')
})

t.test('GET /v1/posts/{postId}: 404 PostNotFound, 422 malformed id, ETag and If-None-Match', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const missing = await app.inject({ method: 'GET', url: `/v1/posts/${MISSING}` })
  t.equal(missing.statusCode, 404)
  t.equal(json(missing).code, 'PostNotFound')
  t.equal(missing.headers['content-type'], 'application/problem+json; charset=utf-8')
  const malformed = await app.inject({ method: 'GET', url: '/v1/posts/not-a-uuid' })
  t.equal(malformed.statusCode, 422)
  t.equal(json(malformed).errors[0].in, 'path')

  const post = await createPost(app, creator)
  const first = await app.inject({ method: 'GET', url: `/v1/posts/${post.id}` })
  const etag = first.headers.etag as string
  t.match(etag, /^"[^"]+"$/, 'a strong ETag')
  const notModified = await app.inject({ method: 'GET', url: `/v1/posts/${post.id}`, headers: { 'if-none-match': etag } })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.body, '')
  const other = await app.inject({ method: 'GET', url: `/v1/posts/${post.id}`, headers: { 'if-none-match': '"other"' } })
  t.equal(other.statusCode, 200)
  t.equal(etag, `"${createHash('sha256').update(first.body).digest('base64url').slice(0, 27)}"`, 'the ETag is a hash of the bytes sent')
  const banned = await createUser(app, { active: false })
  t.equal(
    json(await app.inject({ method: 'GET', url: `/v1/posts/${post.id}`, headers: banned.headers })).code,
    'UserIsBanned',
    'a sent token is checked'
  )
})

t.test('If-Match takes the ETag GET sent, whatever the text needs escaped (quotes, backslashes, tabs, U+2028, emoji)', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const text = 'say "hi" \\ back\tslash\r\n line\u2028sep 😀 ' + 'long enough to leave the short-string path '.repeat(3)
  const post = await createPost(app, creator, { title: text.slice(0, 60), body: text })
  const url = `/v1/posts/${post.id}`
  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string
  const res = await app.inject({
    method: 'PUT',
    url,
    headers: { ...creator.headers, 'if-match': etag },
    payload: { title: 'Plain', type: 'ARTICLE', body: text }
  })
  t.equal(res.statusCode, 200, res.body)
  const gone = await app.inject({ method: 'DELETE', url, headers: { ...creator.headers, 'if-match': etag } })
  t.equal(gone.statusCode, 412, 'the old ETag no longer matches')
  const deleted = await app.inject({ method: 'DELETE', url, headers: { ...creator.headers, 'if-match': res.headers.etag as string } })
  t.equal(deleted.statusCode, 204, 'the ETag PUT answered is the one DELETE accepts')
})

t.test('PUT /v1/posts/{postId} replaces the writable fields (owner only) and honours If-Match', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const post = await createPost(app, creator, {
    title: 'First title',
    tags: ['a'],
    body: 'text',
    media_url: MEDIA,
    published_at: '2026-01-01T00:00:00Z'
  })
  const url = `/v1/posts/${post.id}`
  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string

  const stale = await app.inject({
    method: 'PUT',
    url,
    headers: { ...creator.headers, 'if-match': '"stale"' },
    payload: { title: 'Changed', type: 'ARTICLE' }
  })
  t.equal(stale.statusCode, 412)
  t.equal(json(stale).code, 'PreconditionFailed')
  t.same(json(await app.inject({ method: 'GET', url })), post, 'a stale If-Match changes nothing')

  const stranger = await createCreator(app)
  const notOwner = await app.inject({ method: 'PUT', url, headers: stranger.headers, payload: { title: 'Mine', type: 'ARTICLE' } })
  t.equal(notOwner.statusCode, 403)
  t.equal(json(notOwner).code, 'UserNotOwner')
  t.equal((await app.inject({ method: 'PUT', url, payload: { title: 'x', type: 'ARTICLE' } })).statusCode, 401)
  const banned = await createCreator(app, { active: false })
  t.equal(json(await app.inject({ method: 'PUT', url, headers: banned.headers, payload: { title: 'x', type: 'ARTICLE' } })).code, 'UserIsBanned')
  const missing = await app.inject({ method: 'PUT', url: `/v1/posts/${MISSING}`, headers: creator.headers, payload: { title: 'x', type: 'ARTICLE' } })
  t.equal(json(missing).code, 'PostNotFound')
  t.equal(
    (await app.inject({ method: 'PUT', url, headers: creator.headers, payload: { type: 'ARTICLE' } })).statusCode,
    422,
    'PUT takes the create body: title required'
  )

  const res = await app.inject({
    method: 'PUT',
    url,
    headers: { ...creator.headers, 'if-match': etag },
    payload: { title: 'New title', type: 'COURSE', tags: ['B'] }
  })
  t.equal(res.statusCode, 200)
  const updated = json(res)
  t.match(updated, { id: post.id, title: 'New title', type: 'COURSE', tags: ['b'], body: '', media_url: null })
  t.equal(updated.slug, 'first-title', 'an absent slug keeps the stored one')
  t.equal(updated.published_at, '2026-01-01T00:00:00+0000', 'an absent published_at keeps the stored one')
  t.equal(updated.created_at, post.created_at)
  t.not(res.headers.etag, etag, 'the ETag changes with the post')
  t.equal(res.headers.etag, (await app.inject({ method: 'GET', url })).headers.etag, 'PUT answers the ETag a GET gives')
  const tags = await app.db.selectFrom('post_tag').select('tag').where('post_id', '=', post.id).execute()
  t.same(
    tags.map(r => r.tag),
    ['b'],
    'the tag rows follow'
  )

  const draft = json(
    await app.inject({
      method: 'PUT',
      url,
      headers: creator.headers,
      payload: { title: 'New title', type: 'COURSE', slug: 'renamed', published_at: null }
    })
  )
  t.match(draft, { slug: 'renamed', published_at: null })
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 404, 'unpublished again: hidden')
  const strangerOnDraft = await app.inject({ method: 'PUT', url, headers: stranger.headers, payload: { title: 'x', type: 'ARTICLE' } })
  t.equal(json(strangerOnDraft).code, 'PostNotFound', 'a draft does not exist for others, even to change')

  await createPost(app, creator, { slug: 'taken' })
  const clash = await app.inject({ method: 'PUT', url, headers: creator.headers, payload: { title: 'x', type: 'ARTICLE', slug: 'taken' } })
  t.equal(clash.statusCode, 409)
  t.equal(json(clash).code, 'Conflict')
})

t.test('DELETE /v1/posts/{postId}: owner, If-Match, 204, and everything under it goes', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const post = await createPost(app, creator, { tags: ['x'] })
  const url = `/v1/posts/${post.id}`
  await app.inject({ method: 'POST', url: `${url}/reviews`, headers: reader.headers, payload: { rating: 4 } })
  await app.inject({ method: 'POST', url: `${url}/comments`, headers: reader.headers, payload: { text: 'hi' } })

  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 401)
  const notOwner = await app.inject({ method: 'DELETE', url, headers: reader.headers })
  t.equal(notOwner.statusCode, 403)
  t.equal(json(notOwner).code, 'UserNotOwner')
  const stale = await app.inject({ method: 'DELETE', url, headers: { ...creator.headers, 'if-match': '"stale"' } })
  t.equal(stale.statusCode, 412)
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, 'a stale If-Match deletes nothing')
  t.equal(json(await app.inject({ method: 'DELETE', url: `/v1/posts/${MISSING}`, headers: creator.headers })).code, 'PostNotFound')

  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string
  const res = await app.inject({ method: 'DELETE', url, headers: { ...creator.headers, 'if-match': etag } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 404)
  for (const table of ['post_tag', 'review', 'comment'] as const) {
    const rows = await app.db.selectFrom(table).select('post_id').execute()
    t.same(rows, [], `its ${table} rows are gone`)
  }
})

t.test('GET /v1/posts: list bounds, envelope, Link header', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  for (let i = 0; i < 12; i++) await createPost(app, creator)
  await checkListBounds(t, app, '/v1/posts')

  const first = await app.inject({ method: 'GET', url: '/v1/posts' })
  const body = json(first)
  t.same(Object.keys(body).sort(), ['posts', 'total'])
  t.equal(body.posts.length, 10, 'limit defaults to 10')
  t.equal(body.total, 12, 'total counts every match')
  t.equal(first.headers.link, '</v1/posts?limit=10&offset=10>; rel="next"')
  const second = await app.inject({ method: 'GET', url: '/v1/posts?type=ARTICLE&limit=5&offset=10' })
  t.equal(json(second).posts.length, 2)
  t.equal(json(second).total, 12)
  t.equal(
    second.headers.link,
    '</v1/posts?type=ARTICLE&limit=5&offset=5>; rel="prev", </v1/posts?type=ARTICLE&limit=5&offset=0>; rel="first"',
    'prev and first keep the other parameters'
  )
  const middle = await app.inject({ method: 'GET', url: '/v1/posts?limit=4&offset=4' })
  t.match(middle.headers.link, /offset=8>; rel="next".*offset=0>; rel="prev"/)
  const beyond = json(await app.inject({ method: 'GET', url: '/v1/posts?offset=50' }))
  t.same(beyond, { posts: [], total: 12 }, 'past the end: an empty page, the total still counted')
})

t.test('GET /v1/posts: sorting both ways and the filters type, tags (all of) and creator_id', async t => {
  const app = await build(t)
  const ada = await createCreator(app)
  const bob = await createCreator(app)
  const a = await createPost(app, ada, { title: 'Alpha', type: 'ARTICLE', tags: ['rust', 'web'] })
  const b = await createPost(app, ada, { title: 'Bravo', type: 'COURSE', tags: ['rust'] })
  const c = await createPost(app, bob, { title: 'Charlie', type: 'ARTICLE', tags: ['web'] })
  await backdate(app, a.id, 30)
  await backdate(app, b.id, 20)
  await backdate(app, c.id, 10)
  const ids = async (query: string) =>
    json(await app.inject({ method: 'GET', url: `/v1/posts?${query}` })).posts.map((p: { title: string }) => p.title)

  t.same(await ids('sort=title'), ['Alpha', 'Bravo', 'Charlie'])
  t.same(await ids('sort=-title'), ['Charlie', 'Bravo', 'Alpha'])
  t.same(await ids('sort=created_at'), ['Alpha', 'Bravo', 'Charlie'])
  t.same(await ids('sort=-created_at'), ['Charlie', 'Bravo', 'Alpha'])
  t.same(await ids('sort=published_at'), ['Alpha', 'Bravo', 'Charlie'])
  t.same(await ids('sort=-updated_at'), ['Charlie', 'Bravo', 'Alpha'])
  t.equal((await app.inject({ method: 'GET', url: '/v1/posts?sort=type' })).statusCode, 422, 'type is not a sort field')
  t.same(await ids('sort=-published_at,title'), ['Charlie', 'Bravo', 'Alpha'], 'several keys')

  t.same(await ids('type=COURSE'), ['Bravo'])
  t.same(await ids('type=ARTICLE&sort=title'), ['Alpha', 'Charlie'])
  t.equal((await app.inject({ method: 'GET', url: '/v1/posts?type=VIDEO' })).statusCode, 422)
  t.same(await ids('tags=rust&sort=title'), ['Alpha', 'Bravo'])
  t.same(await ids('tags=rust,web'), ['Alpha'], 'several tags: posts carrying all of them')
  t.same(await ids('tags=RUST,Web'), ['Alpha'], 'tags match case-insensitively')
  t.same(await ids('tags=nothing'), [])
  t.equal((await app.inject({ method: 'GET', url: '/v1/posts?tags=a,,b' })).statusCode, 422)
  t.same(await ids(`creator_id=${bob.id}`), ['Charlie'])
  t.same(await ids(`creator_id=${ada.id}&tags=web`), ['Alpha'], 'filters combine')
  t.equal((await app.inject({ method: 'GET', url: '/v1/posts?creator_id=bob' })).statusCode, 422)
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/posts?tags=rust&limit=1' })).total, 2, 'total counts the filtered set')
})

t.test('GET /v1/posts: default order is the latest of updated_at, published_at, created_at; an update moves a post up', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const a = await createPost(app, creator, { title: 'A' })
  const b = await createPost(app, creator, { title: 'B' })
  const c = await createPost(app, creator, { title: 'C' })
  await backdate(app, a.id, 30)
  await backdate(app, b.id, 20)
  await backdate(app, c.id, 10)
  const order = async () => json(await app.inject({ method: 'GET', url: '/v1/posts' })).posts.map((p: { title: string }) => p.title)
  t.same(await order(), ['C', 'B', 'A'], 'newest first')

  const res = await app.inject({ method: 'PUT', url: `/v1/posts/${a.id}`, headers: creator.headers, payload: { title: 'A', type: 'ARTICLE' } })
  t.equal(res.statusCode, 200)
  t.same(await order(), ['A', 'C', 'B'], 'the updated post moves to the top')

  // A post created long ago but published later ranks by its publication.
  const old = new Date(Date.now() - 60 * 60_000).toISOString()
  const late = new Date(Date.now() - 5 * 60_000).toISOString()
  await app.db.updateTable('post').set({ created_at: old, updated_at: old }).where('id', '=', b.id).execute()
  const put = await app.inject({
    method: 'PUT',
    url: `/v1/posts/${b.id}`,
    headers: creator.headers,
    payload: { title: 'B', type: 'ARTICLE', published_at: late }
  })
  t.equal(put.statusCode, 200)
  const row = await app.db.selectFrom('post').select(['sort_at', 'updated_at']).where('id', '=', b.id).executeTakeFirstOrThrow()
  t.equal(new Date(row.sort_at).toISOString(), new Date(row.updated_at).toISOString(), 'sort_at is the latest of the three')
})

t.test('POST /v1/posts with Idempotency-Key: replay, other body, concurrency', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const count = async () =>
    Number(
      (
        await app.db
          .selectFrom('post')
          .select(eb => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n
    )
  const send = (key: string, payload: object) =>
    app.inject({ method: 'POST', url: '/v1/posts', headers: { ...creator.headers, 'idempotency-key': key }, payload })

  const first = await send('key-1', { title: 'Once', type: 'ARTICLE' })
  t.equal(first.statusCode, 201)
  const again = await send('key-1', { title: 'Once', type: 'ARTICLE' })
  t.equal(again.statusCode, 201)
  t.same(json(again), json(first), 'the retry gets the first answer')
  t.equal(again.headers.location, first.headers.location)
  t.equal(await count(), 1, 'and creates nothing')

  const other = await send('key-1', { title: 'Another', type: 'ARTICLE' })
  t.equal(other.statusCode, 422, 'same key, other body')
  t.equal(json(other).code, 'ValidationFailed')
  t.equal(await count(), 1)

  const [x, y] = await Promise.all([send('key-2', { title: 'Twice', type: 'ARTICLE' }), send('key-2', { title: 'Twice', type: 'ARTICLE' })])
  t.equal(x.statusCode, 201)
  t.equal(y.statusCode, 201)
  t.equal(json(x).id, json(y).id, 'two concurrent requests with one key: one post')
  t.equal(await count(), 2)

  const refused = await send('key-3', { title: 'Once', type: 'ARTICLE' })
  t.equal(refused.statusCode, 409, 'a conflict is not stored…')
  await app.db.deleteFrom('post').where('slug', '=', 'once').execute()
  t.equal((await send('key-3', { title: 'Once', type: 'ARTICLE' })).statusCode, 201, '…so the same key may be retried')
})

// The key's hooks run after the route's own checks. Why: docs/decisions/0008-per-route-hooks.md
t.test('POST /v1/posts: the Idempotency-Key is read only once the caller may create', async t => {
  const app = await build(t)
  const reader = await createUser(app)
  const keys = async () =>
    Number(
      (
        await app.db
          .selectFrom('idempotency_key')
          .select(eb => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n
    )
  const send = (user: { headers: Record<string, string> }, key: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/posts',
      headers: { ...user.headers, 'idempotency-key': key },
      payload: { title: 'Kept', type: 'ARTICLE' }
    })

  t.equal((await send(reader, 'not a key')).statusCode, 403, "a non-creator with a malformed key: 403, not the key's 422")
  t.equal((await send(reader, 'key-r')).statusCode, 403, 'a non-creator with a well-formed key: 403')
  t.equal(await keys(), 0, 'no key was written for them')

  const creator = await createCreator(app)
  t.equal((await send(creator, 'not a key')).statusCode, 422, "a creator with a malformed key: the key's 422")
  t.equal((await send(creator, 'key-c')).statusCode, 201)
  t.equal(await keys(), 1, "the creator's key is stored")
  await app.db.updateTable('user').set({ is_creator: false }).where('id', '=', creator.id).execute()
  t.equal((await send(creator, 'key-c')).statusCode, 403, 'once no longer a creator, a stored key replays nothing: 403')
})
