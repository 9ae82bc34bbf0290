import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { createComment } from '../../../src/domain/comments.js'
import { createReview } from '../../../src/domain/reviews.js'
import { createCreator, createUser, verifyEmail } from '../../fixtures.js'
import { build, json } from '../../helper.js'
import { insertPost } from '../../post-fixtures.js'

t.test('POST /v1/users/{userId}/email answers 202 and queues your account summary', async (t) => {
  const app = await build(t)
  const me = await createCreator(app, { verified: true })
  const reader = await createUser(app)
  const postId = await insertPost(app, me.id, { title: 'One' })
  await insertPost(app, me.id, { title: 'Two' })
  await createReview(app.db, postId, reader.id, { rating: 4 })
  await createComment(app.db, postId, me.id, { text: 'thanks' })
  const before = await app.db.selectFrom('outbox_message').select('id').execute()

  const res = await app.inject({ method: 'POST', url: `/v1/users/${me.id}/email`, headers: me.headers })
  t.equal(res.statusCode, 202)
  t.same(json(res), { status: 'queued' })

  const queued = await app.db.selectFrom('outbox_message').selectAll().where('id', 'not in', before.map(r => r.id)).execute()
  t.equal(queued.length, 1)
  const [mail] = queued
  t.equal(mail.to_address, me.email)
  t.equal(mail.subject, 'Your Roja account summary')
  t.match(mail.body, `Hello ${me.username},`)
  t.match(mail.body, /account type: creator/)
  t.match(mail.body, /posts: +2\n/)
  t.match(mail.body, /reviews: +0\n/, 'reviews written by you')
  t.match(mail.body, /comments: +1\n/)
  t.match(mail.body, /alerts: +1\n/, 'the reader\'s review alerted you')

  // The answer comes first; the worker sends it afterwards (here: as an .eml file).
  await app.outbox.runOnce()
  const eml = await readFile(join(app.outbox.mailDir, `${mail.id}.eml`), 'utf8')
  t.match(eml, /^Subject: Your Roja account summary$/m)
  t.match(eml, new RegExp(`^To: ${me.email.replace('.', '\\.')}$`, 'm'))
})

t.test('POST /v1/users/{userId}/email while the address is unverified: 403 EmailNotVerified, nothing queued; verified: 202', async (t) => {
  const app = await build(t)
  const me = await createUser(app)
  const summaries = () => app.db.selectFrom('outbox_message').select('id').where('subject', '=', 'Your Roja account summary').execute()
  const refused = await app.inject({ method: 'POST', url: `/v1/users/${me.id}/email`, headers: me.headers })
  t.equal(refused.statusCode, 403)
  t.equal(json(refused).code, 'EmailNotVerified')
  t.match(json(refused).detail, /verify your e-mail address first/)
  t.same(await summaries(), [], 'nothing queued')
  await verifyEmail(app, me)
  t.equal((await app.inject({ method: 'POST', url: `/v1/users/${me.id}/email`, headers: me.headers })).statusCode, 202)
  t.equal((await summaries()).length, 1)
})

t.test('POST /v1/users/{userId}/email is self only: another user\'s id is 403 UserNotOwner, nothing queued', async (t) => {
  const app = await build(t)
  const me = await createUser(app)
  const other = await createUser(app)
  const res = await app.inject({ method: 'POST', url: `/v1/users/${other.id}/email`, headers: me.headers })
  t.equal(res.statusCode, 403)
  t.equal(json(res).code, 'UserNotOwner')
  t.equal((await app.db.selectFrom('outbox_message').select('id').execute()).length, 0)
})

t.test('POST /v1/users/{userId}/email: 401 without a token, 403 when banned, 422 for a malformed id', async (t) => {
  const app = await build(t)
  const me = await createUser(app)
  const banned = await createUser(app, { active: false })

  const anonymous = await app.inject({ method: 'POST', url: `/v1/users/${me.id}/email` })
  t.equal(anonymous.statusCode, 401)
  t.equal(json(anonymous).code, 'NotAuthenticated')

  const ban = await app.inject({ method: 'POST', url: `/v1/users/${banned.id}/email`, headers: banned.headers })
  t.equal(ban.statusCode, 403)
  t.equal(json(ban).code, 'UserIsBanned')

  const malformed = await app.inject({ method: 'POST', url: '/v1/users/not-a-uuid/email', headers: me.headers })
  t.equal(malformed.statusCode, 422)
  t.equal(json(malformed).code, 'ValidationFailed')
  t.equal(json(malformed).errors[0].in, 'path')
  t.equal((await app.db.selectFrom('outbox_message').select('id').execute()).length, 0)
})
