import t from 'tap'
import { createCreator, createUser } from './fixtures.js'
import { build, json } from './helper.js'
import { insertPost } from './post-fixtures.js'
import { createReview } from '../src/domain/reviews.js'

/**
 * Every route that sends mail has a per-user and per-recipient limit (MAIL_RATE_LIMIT_MAX per
 * MAIL_RATE_LIMIT_WINDOW), whatever address the requests come from; over it: 429, nothing queued.
 */
const MAX = 3

t.test('mail-sending routes stop at MAIL_RATE_LIMIT_MAX per user, from any IP, and queue nothing more', async (t) => {
  const app = await build(t, { env: { MAIL_RATE_LIMIT_MAX: String(MAX) } })
  const queued = async () => (await app.db.selectFrom('outbox_message').select('id').execute()).length

  const routes = async () => {
    const me = await createCreator(app, { verified: true })
    const postId = await insertPost(app, me.id, { title: 'Mine' })
    const reader = await createUser(app)
    await createReview(app.db, postId, reader.id, { rating: 5 })
    const [alert] = json(await app.inject({ method: 'GET', url: '/v1/alerts', headers: me.headers })).alerts
    return {
      me,
      list: [
        { method: 'POST', url: `/v1/users/${me.id}/email` },
        { method: 'POST', url: `/v1/alerts/${alert.id as string}/resend` },
        { method: 'GET', url: `/v1/users/${me.id}/posts/${postId}` }
      ] as const
    }
  }

  for (const index of [0, 1, 2]) {
    const { me, list } = await routes()
    const route = list[index]
    const before = await queued()
    const statuses: number[] = []
    for (let n = 1; n <= MAX + 3; n++) {
      const res = await app.inject({ ...route, headers: me.headers, remoteAddress: `10.7.0.${n}` })
      statuses.push(res.statusCode)
      if (res.statusCode === 429) {
        t.equal(json(res).code, 'RateLimited')
        t.ok(Number(res.headers['retry-after']) >= 1)
      }
    }
    const ok = route.method === 'GET' ? 200 : 202
    t.same(statuses, [...Array(MAX).fill(ok), 429, 429, 429], `${route.method} ${route.url.replace(/[0-9a-f-]{36}/g, '{id}')}: ${MAX} then 429, each from another IP`)
    t.equal(await queued() - before, MAX, 'only the allowed ones queued mail')
  }

  const { me, list } = await routes()
  for (let n = 0; n < MAX; n++) await app.inject({ ...list[n % 3], headers: me.headers })
  const shared = await app.inject({ ...list[0], headers: me.headers })
  t.equal(shared.statusCode, 429, 'the routes share one budget per user')
  const other = await createCreator(app, { verified: true })
  const otherRes = await app.inject({ method: 'POST', url: `/v1/users/${other.id}/email`, headers: other.headers })
  t.equal(otherRes.statusCode, 202, 'another user has their own')
})

t.test('with Redis unreachable the limit still holds: counted in this instance, never skipped', async (t) => {
  const app = await build(t, { env: { MAIL_RATE_LIMIT_MAX: String(MAX), REDIS_URL: 'redis://127.0.0.1:1' } })
  const queued = async () => (await app.db.selectFrom('outbox_message').select('id').execute()).length
  const me = await createCreator(app, { verified: true })
  const postId = await insertPost(app, me.id, { title: 'Mine' })
  const reader = await createUser(app)
  await createReview(app.db, postId, reader.id, { rating: 5 })
  const [alert] = json(await app.inject({ method: 'GET', url: '/v1/alerts', headers: me.headers })).alerts
  const before = await queued()
  const statuses: number[] = []
  for (let n = 1; n <= MAX + 4; n++) {
    statuses.push((await app.inject({ method: 'POST', url: `/v1/alerts/${alert.id as string}/resend`, headers: me.headers, remoteAddress: `10.8.0.${n}` })).statusCode)
  }
  t.same(statuses, [...Array(MAX).fill(202), 429, 429, 429, 429], `${MAX} resends, then 429`)
  t.equal(await queued() - before, MAX, 'only the allowed ones queued mail')
})
