import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { createComment } from '../../../src/domain/comments.js'
import { createReview } from '../../../src/domain/reviews.js'
import { createCreator, createUser, verifyEmail, type TestUser } from '../../fixtures.js'
import { build, json } from '../../helper.js'
import { checkListBounds, insertPost, MISSING } from '../../post-fixtures.js'

interface World {
  app: FastifyInstance
  creator: TestUser
  reader: TestUser
  postId: string
}

async function world (t: Test): Promise<World> {
  const app = await build(t) // the outbox worker only runs on its own once the app listens: tests call runOnce
  const creator = await createCreator(app, { verified: true })
  const reader = await createUser(app)
  const postId = await insertPost(app, creator.id, { title: 'Cats' })
  return { app, creator, reader, postId }
}

// Reviews and comments are made with their domain functions: the alert comes from there.
const review = (w: World, by: TestUser = w.reader) => createReview(w.app.db, w.postId, by.id, { rating: 5, text: 'great' })
const comment = (w: World, by: TestUser = w.reader) => createComment(w.app.db, w.postId, by.id, { text: 'nice' })

const list = (w: World, user: TestUser, query = '') => w.app.inject({ method: 'GET', url: `/v1/alerts${query}`, headers: user.headers })

/** The creator's newest alert (throws with the answer when the list is not 200). */
async function firstAlert (w: World) {
  const res = await list(w, w.creator)
  if (res.statusCode !== 200) throw new Error(`GET /v1/alerts: ${res.statusCode} ${res.body}`)
  return json(res).alerts[0]
}

/** Spreads the alerts' created_at a minute apart, oldest first, so order does not hang on milliseconds. */
async function spread (app: FastifyInstance, ids: string[]) {
  for (const [i, id] of ids.entries()) {
    await app.db.updateTable('alert').set({ created_at: new Date(Date.now() - (ids.length - i) * 60_000).toISOString() }).where('id', '=', id).execute()
  }
}

t.test('a review and a comment on your post alert you and queue e-mails; your own activity does not', async (t) => {
  const w = await world(t)
  await review(w)
  await comment(w)
  await comment(w, w.creator)

  const res = await list(w, w.creator)
  t.equal(res.statusCode, 200)
  const body = json(res)
  t.equal(body.total, 2)
  t.same(body.alerts.map((a: { kind: string }) => a.kind).sort(), ['comment', 'review'])
  for (const alert of body.alerts) {
    t.same(Object.keys(alert).sort(), ['created_at', 'id', 'kind', 'message', 'post_id', 'sent_at'])
    t.equal(alert.post_id, w.postId)
    t.equal(alert.sent_at, null)
    t.match(alert.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/)
    t.equal(alert.message, `${w.reader.username} left a ${alert.kind} on your post "Cats"`)
  }
  const mails = await w.app.db.selectFrom('outbox_message').selectAll().where('alert_id', 'is not', null).execute()
  t.equal(mails.length, 2, 'one e-mail per alert, queued with the review or comment')
  t.same(mails.map(m => m.to_address), [w.creator.email, w.creator.email])

  t.equal(json(await list(w, w.reader)).total, 0, 'the reader has no alerts')
})

t.test('while the creator\'s address is unverified, alerts are made but not mailed, and resend is 403 EmailNotVerified', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const reader = await createUser(app)
  const w = { app, creator, reader, postId: await insertPost(app, creator.id, { title: 'Cats' }) }
  await review(w)
  await comment(w)
  const alertMail = () => app.db.selectFrom('outbox_message').select('id').where('alert_id', 'is not', null).execute()
  t.equal(json(await list(w, creator)).total, 2, 'the alerts are made and visible')
  t.same(await alertMail(), [], 'no e-mail queued for them')

  const alert = await firstAlert(w)
  const refused = await app.inject({ method: 'POST', url: `/v1/alerts/${alert.id as string}/resend`, headers: creator.headers })
  t.equal(refused.statusCode, 403)
  t.equal(json(refused).code, 'EmailNotVerified')
  t.same(await alertMail(), [], 'resend queued nothing')

  await verifyEmail(app, creator)
  t.equal((await app.inject({ method: 'POST', url: `/v1/alerts/${alert.id as string}/resend`, headers: creator.headers })).statusCode, 202)
  await comment(w)
  t.equal((await alertMail()).length, 2, 'once verified: the resend and the next alert are mailed')
})

t.test('GET /v1/alerts lists only your alerts, newest first, with paging, sorting and the kind filter', async (t) => {
  const w = await world(t)
  const other = await createUser(w.app)
  await review(w)
  await comment(w)
  await comment(w, other)
  const ids = (await w.app.db.selectFrom('alert').select(['id', 'kind']).orderBy('created_at').orderBy('id').execute())
  await spread(w.app, ids.map(r => r.id))
  const [oldest, middle, newest] = ids.map(r => r.id)

  let res = await list(w, w.creator)
  t.same(json(res).alerts.map((a: { id: string }) => a.id), [newest, middle, oldest], 'default: newest first')
  t.equal(res.headers.link, undefined, 'one page: no Link')

  res = await list(w, w.creator, '?sort=created_at')
  t.same(json(res).alerts.map((a: { id: string }) => a.id), [oldest, middle, newest])

  res = await list(w, w.creator, '?limit=1&offset=1')
  t.same(json(res), { alerts: [json(res).alerts[0]], total: 3 })
  t.equal(json(res).alerts[0].id, middle)
  t.match(res.headers.link, /<\/v1\/alerts\?limit=1&offset=2>; rel="next"/)
  t.match(res.headers.link, /<\/v1\/alerts\?limit=1&offset=0>; rel="prev"/)

  res = await list(w, w.creator, '?kind=comment')
  t.equal(json(res).total, 2)
  t.ok(json(res).alerts.every((a: { kind: string }) => a.kind === 'comment'))
  t.equal((await list(w, w.creator, '?kind=like')).statusCode, 422, 'an unknown kind is refused')

  await checkListBounds(t, w.app, '/v1/alerts', w.creator.headers)
})

t.test('GET /v1/alerts/{alertId}: your alert with an ETag; another user\'s is 403; a missing one 404', async (t) => {
  const w = await world(t)
  await review(w)
  const alert = await firstAlert(w)

  const res = await w.app.inject({ method: 'GET', url: `/v1/alerts/${alert.id}`, headers: w.creator.headers })
  t.equal(res.statusCode, 200)
  t.same(json(res), alert)
  t.ok(res.headers.etag)
  const again = await w.app.inject({ method: 'GET', url: `/v1/alerts/${alert.id}`, headers: { ...w.creator.headers, 'if-none-match': res.headers.etag as string } })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')

  const theirs = await w.app.inject({ method: 'GET', url: `/v1/alerts/${alert.id}`, headers: w.reader.headers })
  t.equal(theirs.statusCode, 403)
  t.equal(json(theirs).code, 'UserNotOwner')

  const missing = await w.app.inject({ method: 'GET', url: `/v1/alerts/${MISSING}`, headers: w.creator.headers })
  t.equal(missing.statusCode, 404)
  t.equal(json(missing).code, 'AlertNotFound')

  const malformed = await w.app.inject({ method: 'GET', url: '/v1/alerts/not-a-uuid', headers: w.creator.headers })
  t.equal(malformed.statusCode, 422)
  t.equal(json(malformed).code, 'ValidationFailed')
})

t.test('POST /v1/alerts/{alertId}/resend queues the e-mail again; delivery sets sent_at', async (t) => {
  const w = await world(t)
  await review(w)
  const alert = await firstAlert(w)
  await w.app.outbox.runOnce()
  const firstSent = json(await w.app.inject({ method: 'GET', url: `/v1/alerts/${alert.id}`, headers: w.creator.headers })).sent_at
  t.match(firstSent, /\+0000$/, 'the first delivery set sent_at')

  const res = await w.app.inject({ method: 'POST', url: `/v1/alerts/${alert.id}/resend`, headers: w.creator.headers })
  t.equal(res.statusCode, 202)
  t.same(json(res), { status: 'queued' })
  const queued = await w.app.db.selectFrom('outbox_message').selectAll().where('alert_id', '=', alert.id).where('sent_at', 'is', null).execute()
  t.equal(queued.length, 1)
  t.equal(queued[0].to_address, w.creator.email)
  t.equal(queued[0].subject, 'New review on your post', 'a fixed subject: the title is not in a header')
  t.equal(queued[0].body, alert.message)

  // Make the first delivery look older so the second one visibly moves sent_at.
  await w.app.db.updateTable('alert').set({ sent_at: '2020-01-01T00:00:00.000Z' }).where('id', '=', alert.id).execute()
  t.same(await w.app.outbox.runOnce(), { claimed: 1, sent: 1, failed: 0 })
  const after = json(await w.app.inject({ method: 'GET', url: `/v1/alerts/${alert.id}`, headers: w.creator.headers }))
  t.not(after.sent_at, '2020-01-01T00:00:00+0000')
  t.not(after.sent_at, null)
})

t.test('resend: another user\'s alert is 403 and queues nothing; a missing one is 404', async (t) => {
  const w = await world(t)
  await review(w)
  const alert = await firstAlert(w)
  const count = async () => (await w.app.db.selectFrom('outbox_message').select('id').execute()).length
  const before = await count()

  const theirs = await w.app.inject({ method: 'POST', url: `/v1/alerts/${alert.id}/resend`, headers: w.reader.headers })
  t.equal(theirs.statusCode, 403)
  t.equal(json(theirs).code, 'UserNotOwner')
  const missing = await w.app.inject({ method: 'POST', url: `/v1/alerts/${MISSING}/resend`, headers: w.creator.headers })
  t.equal(missing.statusCode, 404)
  t.equal(json(missing).code, 'AlertNotFound')
  const malformed = await w.app.inject({ method: 'POST', url: '/v1/alerts/nope/resend', headers: w.creator.headers })
  t.equal(malformed.statusCode, 422)
  t.equal(await count(), before)
})

t.test('every alerts route needs a token (401) and an active account (403 UserIsBanned)', async (t) => {
  const w = await world(t)
  await review(w)
  const alert = await firstAlert(w)
  const banned = await createUser(w.app, { active: false })
  const routes = [
    { method: 'GET' as const, url: '/v1/alerts' },
    { method: 'GET' as const, url: `/v1/alerts/${alert.id}` },
    { method: 'POST' as const, url: `/v1/alerts/${alert.id}/resend` }
  ]
  for (const route of routes) {
    const anonymous = await w.app.inject(route)
    t.equal(anonymous.statusCode, 401, `${route.method} ${route.url} without a token`)
    t.equal(json(anonymous).code, 'NotAuthenticated')
    t.equal(anonymous.headers['www-authenticate'], 'Bearer')
    const bad = await w.app.inject({ ...route, headers: { authorization: 'Bearer a.b.c' } })
    t.equal(json(bad).code, 'InvalidCredentials')
    const ban = await w.app.inject({ ...route, headers: banned.headers })
    t.equal(ban.statusCode, 403)
    t.equal(json(ban).code, 'UserIsBanned')
  }
})

t.test('deleting a post takes its review and comment alerts along, with their unsent e-mails; others stay', async (t) => {
  const w = await world(t)
  await review(w)
  await comment(w)
  const otherPost = await insertPost(w.app, w.creator.id, { title: 'Dogs' })
  await createComment(w.app.db, otherPost, w.reader.id, { text: 'woof' })
  t.equal(json(await list(w, w.creator)).total, 3)
  const gone = await w.app.inject({ method: 'DELETE', url: `/v1/posts/${w.postId}`, headers: w.creator.headers })
  t.equal(gone.statusCode, 204)
  const left = json(await list(w, w.creator))
  t.same([left.total, left.alerts.map((a: { post_id: string }) => a.post_id)], [1, [otherPost]], 'the total is exact at once')
  const mails = await w.app.db.selectFrom('outbox_message').select('alert_id').where('alert_id', 'is not', null).execute()
  t.equal(mails.length, 1, 'only the other post\'s alert e-mail is left to send')
})
