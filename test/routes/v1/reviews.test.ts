import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build, json } from '../../helper.js'
import { createCreator, createUser } from '../../fixtures.js'
import { MISSING, checkListBounds, createPost } from '../../post-fixtures.js'

t.test('POST /v1/posts/{postId}/reviews: 201, Location, the Review shape; alerts the creator in the same transaction', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app, { verified: true })
  const reader = await createUser(app, { firstName: 'Rita', lastName: 'Reader' })
  const post = await createPost(app, creator, { title: 'Worth reading' })
  const res = await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/reviews`, headers: reader.headers, payload: { rating: 5, text: 'Great' } })
  t.equal(res.statusCode, 201)
  const review = json(res)
  t.equal(res.headers.location, `/v1/posts/${post.id}/reviews/${review.id}`)
  t.match(review, { post_id: post.id, rating: 5, text: 'Great', author: { id: reader.id, username: reader.username, first_name: 'Rita', last_name: 'Reader' } })
  t.same(Object.keys(review).sort(), ['author', 'created_at', 'id', 'post_id', 'rating', 'text'])
  t.match(review.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/)

  const got = await app.inject({ method: 'GET', url: res.headers.location as string })
  t.equal(got.statusCode, 200)
  t.same(json(got), review)
  t.ok(got.headers.etag)
  t.equal((await app.inject({ method: 'GET', url: res.headers.location as string, headers: { 'if-none-match': got.headers.etag as string } })).statusCode, 304)

  const alerts = await app.db.selectFrom('alert').selectAll().execute()
  t.equal(alerts.length, 1)
  t.match(alerts[0], { user_id: creator.id, kind: 'review', post_id: post.id })
  const mail = await app.db.selectFrom('outbox_message').selectAll().where('alert_id', 'is not', null).execute()
  t.equal(mail.length, 1)
  t.equal(mail[0].to_address, creator.email)

  const bare = json(await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/reviews`, headers: (await createUser(app)).headers, payload: { rating: 1 } }))
  t.equal(bare.text, null, 'text is optional')
})

t.test('POST /v1/posts/{postId}/reviews: one per user and post (409), rating 1..5, authorisation, missing and hidden posts', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const post = await createPost(app, creator)
  const url = `/v1/posts/${post.id}/reviews`
  const send = (payload: object, headers: Record<string, string> = reader.headers, to = url) => app.inject({ method: 'POST', url: to, headers, payload })

  for (const rating of [0, 6, 2.5, '5']) {
    const res = await send({ rating })
    t.equal(res.statusCode, 422, `rating ${JSON.stringify(rating)} is refused`)
    t.equal(json(res).errors[0].field, '/rating')
  }
  t.equal((await send({})).statusCode, 422, 'rating is required')
  t.equal((await send({ rating: 3, stars: 3 })).statusCode, 422, 'an unknown property is refused')
  t.equal((await send({ rating: 1 })).statusCode, 201, 'rating 1 is accepted')
  const second = await send({ rating: 5 })
  t.equal(second.statusCode, 409, 'a second review by the same user')
  t.equal(json(second).code, 'Conflict')
  t.equal((await send({ rating: 5 }, (await createUser(app)).headers)).statusCode, 201, 'rating 5 is accepted, by another user')

  const none = await send({ rating: 3 }, {})
  t.equal(none.statusCode, 401)
  t.equal(json(none).code, 'NotAuthenticated')
  const banned = await createUser(app, { active: false })
  t.equal(json(await send({ rating: 3 }, banned.headers)).code, 'UserIsBanned')
  const missing = await send({ rating: 3 }, reader.headers, `/v1/posts/${MISSING}/reviews`)
  t.equal(missing.statusCode, 404)
  t.equal(json(missing).code, 'PostNotFound')
  const draft = await createPost(app, creator, { published_at: null })
  t.equal(json(await send({ rating: 3 }, reader.headers, `/v1/posts/${draft.id}/reviews`)).code, 'PostNotFound', 'a draft cannot be reviewed by others')
  t.equal((await app.db.selectFrom('review').select('id').execute()).length, 2, 'only the accepted reviews exist')
})

t.test('GET /v1/posts/{postId}/reviews: list bounds, sort both ways, rating filter, missing and hidden posts', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const post = await createPost(app, creator)
  const url = `/v1/posts/${post.id}/reviews`
  for (const rating of [3, 5, 1]) {
    const user = await createUser(app)
    t.equal((await app.inject({ method: 'POST', url, headers: user.headers, payload: { rating } })).statusCode, 201)
  }
  // distinct creation times, oldest first: 3, 5, 1
  const rows = await app.db.selectFrom('review').select(['id', 'rating']).execute()
  for (const row of rows) {
    const at = new Date(Date.now() - (10 - row.rating) * 60_000).toISOString()
    await app.db.updateTable('review').set({ created_at: at }).where('id', '=', row.id).execute()
  }
  await checkListBounds(t, app, url)
  const ratings = async (query = '') => json(await app.inject({ method: 'GET', url: `${url}?${query}` })).reviews.map((r: { rating: number }) => r.rating)
  t.same(await ratings(), [5, 3, 1], 'newest first by default')
  t.same(await ratings('sort=rating'), [1, 3, 5])
  t.same(await ratings('sort=-rating'), [5, 3, 1])
  t.same(await ratings('sort=created_at'), [1, 3, 5])
  t.same(await ratings('rating=3'), [3])
  t.equal((await app.inject({ method: 'GET', url: `${url}?rating=6` })).statusCode, 422)
  const page = await app.inject({ method: 'GET', url: `${url}?limit=2` })
  t.equal(json(page).total, 3)
  t.equal(json(page).reviews.length, 2)
  t.match(page.headers.link, /offset=2>; rel="next"/)

  const missing = await app.inject({ method: 'GET', url: `/v1/posts/${MISSING}/reviews` })
  t.equal(missing.statusCode, 404)
  t.equal(json(missing).code, 'PostNotFound')
  const draft = await createPost(app, creator, { published_at: null })
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/posts/${draft.id}/reviews` })).code, 'PostNotFound', 'hidden post, hidden reviews')
  t.equal((await app.inject({ method: 'GET', url: `/v1/posts/${draft.id}/reviews`, headers: creator.headers })).statusCode, 200, 'its creator sees them')
  t.equal((await app.inject({ method: 'GET', url: '/v1/posts/nope/reviews' })).statusCode, 422)
})

t.test('GET /v1/posts/{postId}/reviews/{reviewId}: a review under another post is 404', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const one = await createPost(app, creator)
  const two = await createPost(app, creator)
  const review = json(await app.inject({ method: 'POST', url: `/v1/posts/${one.id}/reviews`, headers: reader.headers, payload: { rating: 4 } }))
  const wrong = await app.inject({ method: 'GET', url: `/v1/posts/${two.id}/reviews/${review.id}` })
  t.equal(wrong.statusCode, 404)
  t.equal(json(wrong).code, 'ResourceNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/posts/${one.id}/reviews/${MISSING}` })).code, 'ResourceNotFound')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/posts/${MISSING}/reviews/${review.id}` })).code, 'PostNotFound')
})

t.test('POST /v1/posts/{postId}/reviews with Idempotency-Key: replay creates nothing; concurrent twins make one review', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const post = await createPost(app, creator)
  const send = (key: string, rating: number) => app.inject({
    method: 'POST', url: `/v1/posts/${post.id}/reviews`, headers: { ...reader.headers, 'idempotency-key': key }, payload: { rating }
  })
  const [a, b] = await Promise.all([send('r-1', 4), send('r-1', 4)])
  t.equal(a.statusCode, 201)
  t.equal(b.statusCode, 201, 'the twin gets the first answer, not a 409')
  t.equal(json(a).id, json(b).id)
  const replay = await send('r-1', 4)
  t.same(json(replay), json(a))
  t.equal(replay.headers['idempotent-replayed'], 'true')
  t.equal((await send('r-1', 2)).statusCode, 422, 'same key, other body')
  t.equal((await app.db.selectFrom('review').select('id').execute()).length, 1)
  t.equal((await app.db.selectFrom('alert').select('id').execute()).length, 1, 'one alert')
})

t.test('PUT and PATCH a review: the author changes it; others 403, stale If-Match 412, bad bodies 422', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const author = await createUser(app)
  const stranger = await createUser(app)
  const post = await createPost(app, creator)
  const created = await send(app, 'POST', `/v1/posts/${post.id}/reviews`, author.headers, { rating: 2, text: 'Typo here' })
  const url = created.headers.location as string
  const read = async () => app.inject({ method: 'GET', url })
  const before = await read()
  const stale = { ...author.headers, 'if-match': String(before.headers.etag) }

  const put = await send(app, 'PUT', url, stale, { rating: 4, text: 'Fixed' })
  t.equal(put.statusCode, 200)
  t.match(json(put), { id: json(created).id, rating: 4, text: 'Fixed', author: { id: author.id } })
  t.not(put.headers.etag, before.headers.etag, 'a new ETag')
  t.equal((await read()).headers.etag, put.headers.etag, 'the ETag PUT answers is the one GET sends')

  const refused = await send(app, 'PUT', url, stale, { rating: 1 })
  t.equal(refused.statusCode, 412)
  t.equal(json(refused).code, 'PreconditionFailed')
  const notAuthor = await app.inject({ method: 'PATCH', url, headers: stranger.headers, payload: { rating: 1 } })
  t.equal(notAuthor.statusCode, 403)
  t.equal(json(notAuthor).code, 'UserNotOwner')
  t.equal((await send(app, 'PUT', url, creator.headers, { rating: 1 })).statusCode, 403, 'not the post\'s creator either')
  for (const payload of [{ rating: 6 }, { rating: null }, { text: 'x', extra: 1 }]) {
    t.equal((await app.inject({ method: 'PATCH', url, headers: author.headers, payload })).statusCode, 422, JSON.stringify(payload))
  }
  t.equal((await send(app, 'PUT', url, author.headers, { text: 'no rating' })).statusCode, 422, 'PUT needs the rating')
  t.match(json(await read()), { rating: 4, text: 'Fixed' }, 'nothing written by the refused requests')

  const mergePatch = { ...author.headers, 'content-type': 'application/merge-patch+json' }
  const patched = await send(app, 'PATCH', url, mergePatch, JSON.stringify({ text: null }))
  t.equal(patched.statusCode, 200)
  t.match(json(patched), { rating: 4, text: null }, 'null clears the text, the rating is kept')
  const put2 = await app.inject({ method: 'PUT', url, headers: author.headers, payload: { rating: 5 } })
  t.match(json(put2), { rating: 5, text: null }, 'PUT replaces: an absent text is null')

  const draft = await createPost(app, creator, { published_at: null })
  const own = await insertReview(app, draft.id, stranger.id)
  const hidden = await send(app, 'PUT', `/v1/posts/${draft.id}/reviews/${own}`, stranger.headers, { rating: 1 })
  t.equal(hidden.statusCode, 404, 'a review of a post the caller cannot see is 404')
  t.equal(json(hidden).code, 'PostNotFound')
  t.equal((await send(app, 'PUT', `/v1/posts/${post.id}/reviews/${MISSING}`, author.headers, { rating: 1 })).statusCode, 404)
})

t.test('DELETE a review: the author withdraws it and its alert; totals exact; once per person still', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app, { verified: true })
  const author = await createUser(app)
  const other = await createUser(app)
  const post = await createPost(app, creator)
  const list = `/v1/posts/${post.id}/reviews`
  const mine = await app.inject({ method: 'POST', url: list, headers: author.headers, payload: { rating: 1 } })
  await app.inject({ method: 'POST', url: list, headers: other.headers, payload: { rating: 5 } })
  const url = mine.headers.location as string
  const alerts = async () => (await app.db.selectFrom('alert').select(['review_id']).execute()).map(a => a.review_id).sort()
  const mail = async () => (await app.db.selectFrom('outbox_message').select('id').where('alert_id', 'is not', null).execute()).length
  const others = await app.db.selectFrom('review').select('id').where('author_id', '=', other.id).executeTakeFirstOrThrow()
  t.same(await alerts(), [json(mine).id, others.id].sort())
  t.equal(await mail(), 2)
  const etag = (await app.inject({ method: 'GET', url })).headers.etag as string

  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 401)
  const stranger = await app.inject({ method: 'DELETE', url, headers: other.headers })
  t.equal(stranger.statusCode, 403)
  t.equal(json(stranger).code, 'UserNotOwner')
  const stale = await app.inject({ method: 'DELETE', url, headers: { ...author.headers, 'if-match': '"stale"' } })
  t.equal(stale.statusCode, 412)
  t.equal(json(await app.inject({ method: 'GET', url: list })).total, 2, 'nothing removed by the refused requests')

  const gone = await app.inject({ method: 'DELETE', url, headers: { ...author.headers, 'if-match': etag } })
  t.equal(gone.statusCode, 204)
  t.equal(gone.body, '')
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 404)
  t.equal(json(await app.inject({ method: 'GET', url: list })).total, 1, 'the total is exact at once')
  t.equal((await alerts()).length, 1, 'the alert the review raised went with it')
  t.equal(await mail(), 1, 'and its unsent e-mail')
  const again = await app.inject({ method: 'DELETE', url, headers: author.headers })
  t.equal(again.statusCode, 404, 'a second DELETE is 404')
  t.equal(json(again).code, 'ResourceNotFound')

  const anew = await app.inject({ method: 'POST', url: list, headers: author.headers, payload: { rating: 3 } })
  t.equal(anew.statusCode, 201, 'the author may review the post again')
  t.equal((await send(app, 'POST', list, author.headers, { rating: 4 })).statusCode, 409, 'still once per person')
})

t.test('deleting a post takes its reviews and their alerts with it', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const post = await createPost(app, creator)
  await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/reviews`, headers: reader.headers, payload: { rating: 4 } })
  t.equal((await app.db.selectFrom('alert').select('id').execute()).length, 1)
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${post.id}`, headers: creator.headers })).statusCode, 204)
  t.equal((await app.db.selectFrom('review').select('id').execute()).length, 0)
  t.equal((await app.db.selectFrom('alert').select('id').execute()).length, 0)
})

async function insertReview (app: FastifyInstance, postId: string, authorId: string): Promise<string> {
  const id = randomUUID()
  const row = { id, post_id: postId, author_id: authorId, rating: 3, text: null, created_at: new Date().toISOString() }
  await app.db.insertInto('review').values(row).execute()
  return id
}

/** One request with a JSON body (or a raw one, when a string). */
function send (app: FastifyInstance, method: 'POST' | 'PUT' | 'PATCH', url: string, headers: Record<string, string>,
  payload: object | string) {
  return app.inject({ method, url, headers, payload })
}
