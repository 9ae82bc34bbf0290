import t from 'tap'
import { build, json } from '../../helper.js'
import { VERIFICATION_SUBJECT } from '../../../src/domain/email-verification.js'
import { createCreator, createUser, verifyEmail } from '../../fixtures.js'
import { MISSING, backdate, checkListBounds, createPost } from '../../post-fixtures.js'

t.test("GET /v1/users/me/posts: the caller's own posts, drafts and scheduled ones too", async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const other = await createCreator(app)
  const published = await createPost(app, creator, { title: 'Published', type: 'COURSE' })
  const draft = await createPost(app, creator, { title: 'Draft', published_at: null })
  const scheduled = await createPost(app, creator, { title: 'Scheduled', published_at: '2999-01-01T00:00:00Z' })
  await createPost(app, other, { title: 'Not mine' })
  await backdate(app, published.id, 30)
  await app.db
    .updateTable('post')
    .set({ sort_at: new Date(Date.now() - 20 * 60_000).toISOString() })
    .where('id', '=', draft.id)
    .execute()

  const res = await app.inject({ method: 'GET', url: '/v1/users/me/posts', headers: creator.headers })
  t.equal(res.statusCode, 200)
  t.same(
    json(res).posts.map((p: { title: string }) => p.title),
    ['Scheduled', 'Draft', 'Published'],
    'default order: latest activity first'
  )
  t.equal(json(res).total, 3)
  const titles = async (query: string) =>
    json(await app.inject({ method: 'GET', url: `/v1/users/me/posts?${query}`, headers: creator.headers })).posts.map(
      (p: { title: string }) => p.title
    )
  t.same(await titles('sort=published_at'), ['Published', 'Scheduled', 'Draft'], 'drafts sort last, ascending…')
  t.same(await titles('sort=-published_at'), ['Scheduled', 'Published', 'Draft'], '…and descending, on both databases')
  t.same(await titles('type=COURSE'), ['Published'])
  t.equal(
    (await app.inject({ method: 'GET', url: `/v1/users/me/posts?creator_id=${other.id}`, headers: creator.headers })).statusCode,
    422,
    "no creator filter on one's own list"
  )
  await checkListBounds(t, app, '/v1/users/me/posts', creator.headers)
  t.same(
    json(await app.inject({ method: 'GET', url: '/v1/users/me/posts', headers: (await createUser(app)).headers })),
    { posts: [], total: 0 },
    'a reader has none'
  )
  t.ok(scheduled.id)

  const none = await app.inject({ method: 'GET', url: '/v1/users/me/posts' })
  t.equal(none.statusCode, 401)
  t.equal(json(none).code, 'NotAuthenticated')
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/users/me/posts', headers: { authorization: 'Bearer x.y.z' } })).code, 'InvalidCredentials')
  t.equal(
    json(await app.inject({ method: 'GET', url: '/v1/users/me/posts', headers: (await createCreator(app, { active: false })).headers })).code,
    'UserIsBanned'
  )
})

t.test("GET /v1/users/{userId}/posts/{postId}: the owner's post, and an e-mail queued to the owner", async t => {
  const app = await build(t)
  const creator = await createCreator(app, { verified: true })
  const post = await createPost(app, creator, { title: 'Mine', published_at: null })
  const url = `/v1/users/${creator.id}/posts/${post.id}`
  const res = await app.inject({ method: 'GET', url, headers: creator.headers })
  t.equal(res.statusCode, 200)
  t.same(json(res), post, 'a draft too')
  t.ok(res.headers.etag)
  const mail = await app.db.selectFrom('outbox_message').selectAll().where('subject', '!=', VERIFICATION_SUBJECT).execute()
  t.equal(mail.length, 1)
  t.equal(mail[0].to_address, creator.email)
  t.equal(mail[0].subject, 'Your post on Roja', 'a fixed subject: the title is not in a header')
  t.match(mail[0].body, /Mine/)
  t.match(mail[0].body, /draft/)
})

t.test('GET /v1/users/{userId}/posts/{postId} while the address is unverified: the post, and no e-mail', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const post = await createPost(app, creator, { title: 'Mine' })
  const url = `/v1/users/${creator.id}/posts/${post.id}`
  const postMail = () => app.db.selectFrom('outbox_message').select('id').where('subject', '=', 'Your post on Roja').execute()
  const res = await app.inject({ method: 'GET', url, headers: creator.headers })
  t.equal(res.statusCode, 200, 'the read is answered')
  t.same(json(res), post)
  t.same(await postMail(), [], 'but nothing is mailed to an unverified address')
  await verifyEmail(app, creator)
  t.equal((await app.inject({ method: 'GET', url, headers: creator.headers })).statusCode, 200)
  t.equal((await postMail()).length, 1, 'once verified, the read queues its e-mail')
})

t.test('GET /v1/users/{userId}/posts/{postId}: self only, owner only, active creator only', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const other = await createCreator(app)
  const post = await createPost(app, creator)
  const otherPost = await createPost(app, other)
  const get = (userId: string, postId: string, headers: Record<string, string>) =>
    app.inject({ method: 'GET', url: `/v1/users/${userId}/posts/${postId}`, headers })

  const notSelf = await get(creator.id, post.id, other.headers)
  t.equal(notSelf.statusCode, 403, "another user's id")
  t.equal(json(notSelf).code, 'UserNotOwner')
  const notOwner = await get(creator.id, otherPost.id, creator.headers)
  t.equal(notOwner.statusCode, 403, "one's own id, another's post")
  t.equal(json(notOwner).code, 'UserNotOwner')

  // a creator whose creator status was taken away still owns the post
  await app.db.updateTable('user').set({ is_creator: false }).where('id', '=', creator.id).execute()
  const notCreator = await get(creator.id, post.id, creator.headers)
  t.equal(notCreator.statusCode, 403)
  t.equal(json(notCreator).code, 'UserNotCreator')
  await app.db.updateTable('user').set({ is_creator: true, is_active: false }).where('id', '=', creator.id).execute()
  t.equal(json(await get(creator.id, post.id, creator.headers)).code, 'UserIsBanned')
  await app.db.updateTable('user').set({ is_active: true }).where('id', '=', creator.id).execute()

  const missing = await get(creator.id, MISSING, creator.headers)
  t.equal(missing.statusCode, 404)
  t.equal(json(missing).code, 'PostNotFound')
  t.equal((await get(creator.id, 'bad', creator.headers)).statusCode, 422)
  t.equal((await get('me', post.id, creator.headers)).statusCode, 422, 'the user id is a UUID')
  t.equal(json(await get(creator.id, post.id, {})).code, 'NotAuthenticated')
  t.equal((await app.db.selectFrom('outbox_message').select('id').execute()).length, 0, 'no refused request queued an e-mail')
  t.equal((await get(creator.id, post.id, creator.headers)).statusCode, 200)
})
