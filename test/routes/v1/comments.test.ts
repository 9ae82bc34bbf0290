import t from 'tap'
import { build, json } from '../../helper.js'
import { createCreator, createUser } from '../../fixtures.js'
import { MISSING, checkListBounds, createPost } from '../../post-fixtures.js'

t.test("POST /v1/posts/{postId}/comments: 201, Location, the Comment shape; alerts the creator, not when commenting on one's own post", async t => {
  const app = await build(t)
  const creator = await createCreator(app, { verified: true })
  const reader = await createUser(app, { firstName: 'Carl', lastName: 'Commenter' })
  const post = await createPost(app, creator)
  const res = await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/comments`, headers: reader.headers, payload: { text: 'Nice' } })
  t.equal(res.statusCode, 201)
  const comment = json(res)
  t.equal(res.headers.location, `/v1/posts/${post.id}/comments/${comment.id}`)
  t.match(comment, {
    post_id: post.id,
    text: 'Nice',
    author: { id: reader.id, username: reader.username, first_name: 'Carl', last_name: 'Commenter' }
  })
  t.same(Object.keys(comment).sort(), ['author', 'created_at', 'id', 'post_id', 'text', 'updated_at'])
  t.same(json(await app.inject({ method: 'GET', url: res.headers.location as string })), comment)

  const alerts = await app.db.selectFrom('alert').selectAll().execute()
  t.equal(alerts.length, 1)
  t.match(alerts[0], { user_id: creator.id, kind: 'comment', post_id: post.id })
  t.same(
    (await app.db.selectFrom('outbox_message').select('to_address').where('alert_id', 'is not', null).execute()).map(m => m.to_address),
    [creator.email]
  )
  t.equal(
    (await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/comments`, headers: creator.headers, payload: { text: 'Thanks' } })).statusCode,
    201
  )
  t.equal((await app.db.selectFrom('alert').select('id').execute()).length, 1, "no alert for a comment on one's own post")
})

t.test('POST /v1/posts/{postId}/comments: validation, authorisation, missing and hidden posts', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const post = await createPost(app, creator)
  const send = (payload: object, headers: Record<string, string> = reader.headers, to = `/v1/posts/${post.id}/comments`) =>
    app.inject({ method: 'POST', url: to, headers, payload })
  t.equal((await send({ text: '' })).statusCode, 422, 'empty text')
  t.equal((await send({})).statusCode, 422, 'text is required')
  t.equal((await send({ text: 'x'.repeat(10_001) })).statusCode, 422, 'text over 10000 characters')
  t.equal((await send({ text: 'x'.repeat(10_000) })).statusCode, 201, 'text of 10000 characters')
  t.equal((await send({ text: 'x', mood: 'happy' })).statusCode, 422, 'unknown property')
  t.equal(json(await send({ text: 'x' }, {})).code, 'NotAuthenticated')
  t.equal(json(await send({ text: 'x' }, (await createUser(app, { active: false })).headers)).code, 'UserIsBanned')
  t.equal(json(await send({ text: 'x' }, reader.headers, `/v1/posts/${MISSING}/comments`)).code, 'PostNotFound')
  const scheduled = await createPost(app, creator, { published_at: '2999-01-01T00:00:00Z' })
  t.equal(
    json(await send({ text: 'x' }, reader.headers, `/v1/posts/${scheduled.id}/comments`)).code,
    'PostNotFound',
    'a scheduled post cannot be commented on by others'
  )
  t.equal((await send({ text: 'x' }, creator.headers, `/v1/posts/${scheduled.id}/comments`)).statusCode, 201, 'its creator may')
})

t.test('GET /v1/posts/{postId}/comments: oldest first, sort both ways, list bounds, missing post', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const post = await createPost(app, creator)
  const url = `/v1/posts/${post.id}/comments`
  for (const text of ['one', 'two', 'three']) await app.inject({ method: 'POST', url, headers: reader.headers, payload: { text } })
  const rows = await app.db.selectFrom('comment').select(['id', 'text']).execute()
  const minutesAgo = { one: 30, two: 20, three: 10 } as Record<string, number>
  for (const row of rows) {
    const at = new Date(Date.now() - minutesAgo[row.text] * 60_000).toISOString()
    await app.db.updateTable('comment').set({ created_at: at, updated_at: at }).where('id', '=', row.id).execute()
  }
  await checkListBounds(t, app, url)
  const texts = async (query = '') => json(await app.inject({ method: 'GET', url: `${url}?${query}` })).comments.map((c: { text: string }) => c.text)
  t.same(await texts(), ['one', 'two', 'three'], 'a conversation reads oldest first')
  t.same(await texts('sort=-created_at'), ['three', 'two', 'one'])
  t.same(await texts('sort=updated_at'), ['one', 'two', 'three'])
  t.equal((await app.inject({ method: 'GET', url: `${url}?sort=text` })).statusCode, 422)
  const page = await app.inject({ method: 'GET', url: `${url}?limit=1&offset=1` })
  t.same(json(page), { comments: [json(page).comments[0]], total: 3 })
  t.equal(json(page).comments[0].text, 'two')
  t.match(page.headers.link, /offset=2>; rel="next".*offset=0>; rel="prev"/)
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/posts/${MISSING}/comments` })).code, 'PostNotFound')
  const draft = await createPost(app, creator, { published_at: null })
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/posts/${draft.id}/comments` })).code, 'PostNotFound')
})

t.test('GET/PUT/DELETE /v1/posts/{postId}/comments/{commentId}: a comment under another post is 404', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const one = await createPost(app, creator)
  const two = await createPost(app, creator)
  const comment = json(await app.inject({ method: 'POST', url: `/v1/posts/${one.id}/comments`, headers: reader.headers, payload: { text: 'hi' } }))
  for (const method of ['GET', 'PUT', 'DELETE'] as const) {
    const payload = method === 'PUT' ? { text: 'moved' } : undefined
    const wrong = await app.inject({ method, url: `/v1/posts/${two.id}/comments/${comment.id}`, headers: reader.headers, payload })
    t.equal(wrong.statusCode, 404, `${method} under another post`)
    t.equal(json(wrong).code, 'ResourceNotFound')
    t.equal(
      json(await app.inject({ method, url: `/v1/posts/${one.id}/comments/${MISSING}`, headers: reader.headers, payload })).code,
      'ResourceNotFound',
      `${method} of a missing comment`
    )
    t.equal(
      json(await app.inject({ method, url: `/v1/posts/${MISSING}/comments/${comment.id}`, headers: reader.headers, payload })).code,
      'PostNotFound',
      `${method} under a missing post`
    )
    t.equal(
      (await app.inject({ method, url: `/v1/posts/${one.id}/comments/bad-id`, headers: reader.headers, payload })).statusCode,
      422,
      `${method} with a malformed id`
    )
  }
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/posts/${one.id}/comments/${comment.id}` })).text, 'hi', 'nothing changed')
})

t.test('PUT /v1/posts/{postId}/comments/{commentId}: author only, If-Match, ETag', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const author = await createUser(app)
  const post = await createPost(app, creator)
  const comment = json(
    await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/comments`, headers: author.headers, payload: { text: 'first' } })
  )
  const url = `/v1/posts/${post.id}/comments/${comment.id}`
  const got = await app.inject({ method: 'GET', url })
  const etag = got.headers.etag as string
  t.ok(etag)
  t.equal((await app.inject({ method: 'GET', url, headers: { 'if-none-match': etag } })).statusCode, 304)

  t.equal(json(await app.inject({ method: 'PUT', url, payload: { text: 'x' } })).code, 'NotAuthenticated')
  const byPostOwner = await app.inject({ method: 'PUT', url, headers: creator.headers, payload: { text: 'censored' } })
  t.equal(byPostOwner.statusCode, 403, "not even the post's creator edits another's comment")
  t.equal(json(byPostOwner).code, 'UserNotOwner')
  t.equal(
    json(await app.inject({ method: 'PUT', url, headers: (await createUser(app, { active: false })).headers, payload: { text: 'x' } })).code,
    'UserIsBanned'
  )
  const stale = await app.inject({ method: 'PUT', url, headers: { ...author.headers, 'if-match': '"stale"' }, payload: { text: 'second' } })
  t.equal(stale.statusCode, 412)
  t.equal(json(stale).code, 'PreconditionFailed')
  t.same(json(await app.inject({ method: 'GET', url })), comment, 'a stale If-Match changes nothing')
  t.equal((await app.inject({ method: 'PUT', url, headers: author.headers, payload: { text: '' } })).statusCode, 422)

  const res = await app.inject({ method: 'PUT', url, headers: { ...author.headers, 'if-match': etag }, payload: { text: 'second' } })
  t.equal(res.statusCode, 200)
  t.match(json(res), { id: comment.id, text: 'second', created_at: comment.created_at })
  t.not(res.headers.etag, etag)
  t.equal(
    (await app.inject({ method: 'PUT', url, headers: { ...author.headers, 'if-match': etag }, payload: { text: 'third' } })).statusCode,
    412,
    'the old ETag is stale now'
  )
})

t.test('DELETE /v1/posts/{postId}/comments/{commentId}: author only, If-Match, 204', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const author = await createUser(app)
  const post = await createPost(app, creator)
  const comment = json(await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/comments`, headers: author.headers, payload: { text: 'bye' } }))
  const url = `/v1/posts/${post.id}/comments/${comment.id}`
  t.equal(json(await app.inject({ method: 'DELETE', url })).code, 'NotAuthenticated')
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: creator.headers })).code, 'UserNotOwner')
  t.equal(json(await app.inject({ method: 'DELETE', url, headers: (await createUser(app, { active: false })).headers })).code, 'UserIsBanned')
  t.equal((await app.inject({ method: 'DELETE', url, headers: { ...author.headers, 'if-match': '"stale"' } })).statusCode, 412)
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, 'a stale If-Match deletes nothing')
  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string
  const res = await app.inject({ method: 'DELETE', url, headers: { ...author.headers, 'if-match': etag } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal(json(await app.inject({ method: 'GET', url })).code, 'ResourceNotFound')
})

t.test('POST /v1/posts/{postId}/comments with Idempotency-Key: one comment for a replay', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const post = await createPost(app, creator)
  const send = (text: string) =>
    app.inject({ method: 'POST', url: `/v1/posts/${post.id}/comments`, headers: { ...reader.headers, 'idempotency-key': 'c-1' }, payload: { text } })
  const [a, b] = await Promise.all([send('hello'), send('hello')])
  t.equal(a.statusCode, 201)
  t.equal(b.statusCode, 201)
  t.equal(json(a).id, json(b).id)
  t.same(json(await send('hello')), json(a))
  t.equal((await send('other')).statusCode, 422)
  t.equal((await app.db.selectFrom('comment').select('id').execute()).length, 1)
})
