import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { alertPostCreator, alertingValues } from '../../src/domain/alerts.js'
import { claimDue, enqueueEmail } from '../../src/domain/outbox.js'
import { toDate } from '../../src/db/date-time-format.js'
import { createCreator, createUser } from '../fixtures.js'
import { build, dialect, migratedDatabase } from '../helper.js'
import { smtpServer } from '../mail.js'
import { insertPost } from '../post-fixtures.js'

const noLoop = { loop: false }

async function row (app: FastifyInstance, id: string) {
  return await app.db.selectFrom('outbox_message').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
}

async function counter (app: FastifyInstance, name: string): Promise<string> {
  return await app.metricsRegistry.getSingleMetricAsString(name)
}

t.test('delivers a queued e-mail to the SMTP server once, and marks it sent', async (t) => {
  const smtp = await smtpServer(t)
  const app = await build(t, { env: { SMTP_URL: smtp.url }, outbox: noLoop })
  const id = await enqueueEmail(app.db, { to: 'ada@example.com', subject: 'Hello there', body: 'the body text' })

  t.same(await app.outbox.runOnce(), { claimed: 1, sent: 1, failed: 0 })
  t.equal(smtp.received.length, 1)
  t.same(smtp.received[0].to, ['ada@example.com'])
  t.equal(smtp.received[0].subject, 'Hello there')
  t.match(smtp.received[0].raw, /the body text/)
  t.equal(smtp.received[0].messageId, `<${id}@roja.outbox>`, 'a stable Message-ID lets receivers drop redeliveries')
  const sent = await row(app, id)
  t.not(sent.sent_at, null)
  t.equal(sent.locked_until_at, null)
  t.equal(sent.attempts, 1)

  t.same(await app.outbox.runOnce(), { claimed: 0, sent: 0, failed: 0 }, 'a sent message is never sent again')
  t.equal(smtp.received.length, 1)
  t.match(await counter(app, 'roja_outbox_sent_total'), /roja_outbox_sent_total 1/)
})

t.test('without SMTP_URL, writes each message as an .eml file under DATA_DIR/mail', async (t) => {
  const app = await build(t, { outbox: noLoop })
  t.equal(app.outbox.mailDir, join(app.config.dataDir, 'mail'))
  const id = await enqueueEmail(app.db, { to: 'ada@example.com', subject: 'File me', body: 'on disk' })

  t.same(await app.outbox.runOnce(), { claimed: 1, sent: 1, failed: 0 })
  t.same(await readdir(app.outbox.mailDir), [`${id}.eml`], 'only the finished file, no temporary one')
  const eml = await readFile(join(app.outbox.mailDir, `${id}.eml`), 'utf8')
  t.match(eml, /^To: ada@example\.com$/m)
  t.match(eml, /^Subject: File me$/m)
  t.match(eml, /on disk/)
  t.not((await row(app, id)).sent_at, null)
})

t.test('a refused message is retried with exponential backoff, then delivered', async (t) => {
  const smtp = await smtpServer(t)
  const app = await build(t, { env: { SMTP_URL: smtp.url }, outbox: { loop: false, backoffBaseMs: 1000, backoffMaxMs: 60_000 } })
  const id = await enqueueEmail(app.db, { to: 'ada@example.com', subject: 'Persist', body: 'x' })
  smtp.refuse(2)
  const t0 = new Date(Date.now() + 1000)

  t.same(await app.outbox.runOnce({ now: t0 }), { claimed: 1, sent: 0, failed: 1 })
  let r = await row(app, id)
  t.equal(r.attempts, 1)
  t.match(r.last_error, /try later/)
  t.equal(r.sent_at, null)
  t.equal(r.locked_until_at, null, 'a failure releases the lease')
  t.equal(toDate(r.next_attempt_at).getTime(), t0.getTime() + 1000, 'first retry after the base delay')

  t.same(await app.outbox.runOnce({ now: new Date(t0.getTime() + 999) }), { claimed: 0, sent: 0, failed: 0 }, 'not before it is due')
  const t1 = new Date(t0.getTime() + 1000)
  t.same(await app.outbox.runOnce({ now: t1 }), { claimed: 1, sent: 0, failed: 1 }, 'due exactly at next_attempt_at')
  r = await row(app, id)
  t.equal(r.attempts, 2)
  t.equal(toDate(r.next_attempt_at).getTime(), t1.getTime() + 2000, 'the delay doubles')

  t.same(await app.outbox.runOnce({ now: new Date(t1.getTime() + 2000) }), { claimed: 1, sent: 1, failed: 0 })
  r = await row(app, id)
  t.not(r.sent_at, null)
  t.equal(r.last_error, null)
  t.equal(smtp.received.length, 1)
  t.match(await counter(app, 'roja_outbox_failed_total'), /roja_outbox_failed_total\{final="false"\} 2/)
})

t.test('after the last attempt a message stays failed, kept with its error', async (t) => {
  const smtp = await smtpServer(t)
  const app = await build(t, { env: { SMTP_URL: smtp.url }, outbox: { loop: false, maxAttempts: 2, backoffBaseMs: 1000 } })
  const id = await enqueueEmail(app.db, { to: 'ada@example.com', subject: 'Doomed', body: 'x' })
  smtp.refuse(100)
  const now = Date.now()
  t.same(await app.outbox.runOnce({ now: new Date(now) }), { claimed: 1, sent: 0, failed: 1 })
  t.same(await app.outbox.runOnce({ now: new Date(now + 1000) }), { claimed: 1, sent: 0, failed: 1 })
  t.same(await app.outbox.runOnce({ now: new Date(now + 86_400_000) }), { claimed: 0, sent: 0, failed: 0 }, 'never tried again')
  const r = await row(app, id)
  t.equal(r.attempts, 2)
  t.equal(r.sent_at, null)
  t.match(r.last_error, /try later/)
  t.match(await counter(app, 'roja_outbox_failed_total'), /roja_outbox_failed_total\{final="true"\} 1/)
})

t.test('delivering an alert\'s e-mail sets the alert\'s sent_at', async (t) => {
  const smtp = await smtpServer(t)
  const app = await build(t, { env: { SMTP_URL: smtp.url }, outbox: noLoop })
  const creator = await createCreator(app, { verified: true })
  const reader = await createUser(app)
  const postId = await insertPost(app, creator.id, { title: 'Cats' })
  const { alertId, ...values } = alertingValues(postId, reader.id, 'review')
  await app.db.transaction().execute(trx => alertPostCreator(trx, { alertId, ...values }))
  const before = await app.db.selectFrom('alert').selectAll().where('id', '=', alertId).executeTakeFirstOrThrow()
  t.equal(before.sent_at, null)

  await app.outbox.runOnce()
  // the creator's verification link went out in the same round
  const alertMail = smtp.received.find(m => m.subject === 'New review on your post')
  t.same(alertMail?.to, [creator.email])
  const after = await app.db.selectFrom('alert').selectAll().where('id', '=', alertId).executeTakeFirstOrThrow()
  t.not(after.sent_at, null)
})

t.test('a restart loses nothing: queued and half-sent messages are delivered by the next process', async (t) => {
  const smtp = await smtpServer(t)
  const database = await migratedDatabase(t, { persistent: true })
  const leaseMs = 60_000
  const first = await build(t, { database, env: { SMTP_URL: smtp.url }, outbox: { loop: false, leaseMs } })
  // The first process claims a message and dies before sending it: its lease is left behind.
  const halfSent = await enqueueEmail(first.db, { to: 'b@example.com', subject: 'half sent', body: 'x' })
  const claimedAt = new Date(Date.now() + 1000)
  const claimed = await claimDue(first.db, { now: claimedAt, leaseMs, limit: 10, maxAttempts: 8 })
  t.same(claimed.map(m => m.id), [halfSent])
  // And another message is queued but not yet tried when it stops.
  const queued = await enqueueEmail(first.db, { to: 'a@example.com', subject: 'queued', body: 'x' })
  await first.close()

  const second = await build(t, { database, env: { SMTP_URL: smtp.url }, outbox: { loop: false, leaseMs } })
  t.same(await second.outbox.runOnce({ now: claimedAt }), { claimed: 1, sent: 1, failed: 0 }, 'the unclaimed one at once')
  t.same(smtp.received.map(m => m.subject), ['queued'])
  t.same(await second.outbox.runOnce({ now: new Date(claimedAt.getTime() + leaseMs - 1) }), { claimed: 0, sent: 0, failed: 0 }, 'a live lease is respected')
  t.same(await second.outbox.runOnce({ now: new Date(claimedAt.getTime() + leaseMs) }), { claimed: 1, sent: 1, failed: 0 }, 'an expired lease is taken over')
  t.same(smtp.received.map(m => m.subject), ['queued', 'half sent'])
  t.not((await row(second, queued)).sent_at, null)
  t.equal((await row(second, halfSent)).attempts, 2, 'the lost attempt counts')
})

t.test(`concurrent workers (${dialect === 'postgres' ? 'two apps on one PostgreSQL schema' : 'one SQLite process'}) never send a message twice`, async (t) => {
  const smtp = await smtpServer(t)
  const database = await migratedDatabase(t, { persistent: true })
  const options = { database, env: { SMTP_URL: smtp.url }, outbox: { loop: false, batchSize: 3 } }
  const first = await build(t, options)
  // PostgreSQL: two instances race through SKIP LOCKED. SQLite is one process: two rounds race in it.
  const second = dialect === 'postgres' ? await build(t, options) : first
  const ids = new Set<string>()
  for (let i = 0; i < 40; i++) ids.add(await enqueueEmail(first.db, { to: `u${i}@example.com`, subject: `m${i}`, body: 'x' }))

  const drain = async (app: FastifyInstance) => {
    let sent = 0
    for (;;) {
      const r = await app.outbox.runOnce()
      if (r.claimed === 0) return sent
      sent += r.sent
    }
  }
  const [a, b, c] = await Promise.all([drain(first), drain(second), drain(first)])
  t.equal(a + b + c, 40)
  t.equal(smtp.received.length, 40, 'each message delivered once')
  t.same(new Set(smtp.received.map(m => m.messageId)), new Set([...ids].map(id => `<${id}@roja.outbox>`)))
})

t.test('a listening server delivers in the background, and stops on close', async (t) => {
  const smtp = await smtpServer(t)
  const app = await build(t, { env: { SMTP_URL: smtp.url }, outbox: { intervalMs: 10 } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const id = await enqueueEmail(app.db, { to: 'ada@example.com', subject: 'In the background', body: 'x' })
  await smtp.waitFor(1)
  t.equal(smtp.received[0].subject, 'In the background')
  await app.close()
  t.equal(smtp.received.length, 1)
  t.ok(id)
})
