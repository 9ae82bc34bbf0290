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
