import { randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { build, freshDatabase, json } from '../helper.js'
import { createUser, PASSWORD } from '../fixtures.js'

const REDIS_URL = 'redis://127.0.0.1:6379'

/** A client address of this run only, so counts never mix with other tests (Redis is shared). */
const clientIp = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

/** Removes only the keys this test made: every Roja rate-limit key that names its client address. */
async function forgetKeys (t: Test, ip: string) {
  t.teardown(async () => {
    const redis = new Redis(REDIS_URL)
    const keys = await redis.keys(`roja-rl:*${ip}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })
}

const get = (app: FastifyInstance, remoteAddress: string, url = '/version') => app.inject({ method: 'GET', url, remoteAddress })

for (const store of ['memory', 'redis'] as const) {
  const env: Record<string, string> = store === 'redis' ? { REDIS_URL } : {}

  t.test(`${store}: the global limit answers 429 problem+json RateLimited with Retry-After`, async (t) => {
    const ip = clientIp()
    if (store === 'redis') await forgetKeys(t, ip)
    const app = await build(t, { env: { ...env, RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW: '1 minute' } })
    for (let i = 1; i <= 3; i++) {
      const res = await get(app, ip)
      t.equal(res.statusCode, 200, `request ${i} passes`)
      t.equal(res.headers['x-ratelimit-remaining'], String(3 - i))
    }
    const limited = await get(app, ip)
    t.equal(limited.statusCode, 429)
    t.equal(limited.headers['content-type'], 'application/problem+json; charset=utf-8')
    t.match(json(limited), { code: 'RateLimited', status: 429, title: 'Too many requests', instance: '/version' })
    const retryAfter = Number(limited.headers['retry-after'])
    t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After is whole seconds within the window (${retryAfter})`)
    t.equal((await get(app, clientIp())).statusCode, 200, 'another client is not affected')
    t.equal((await get(app, ip, '/health')).statusCode, 200, '/health is not limited')
  })

  t.test(`${store}: the token route's stricter limit per IP and username`, async (t) => {
    const ip = clientIp()
    if (store === 'redis') await forgetKeys(t, ip)
    const app = await build(t, { env: { ...env, AUTH_RATE_LIMIT_MAX: '2' } })
    await createUser(app, { username: 'victim' })
    const attempt = (username: string) => app.inject({ method: 'POST', url: '/v1/auth/token', remoteAddress: ip, payload: { username, password: 'wrong password' } })
    t.equal((await attempt('victim')).statusCode, 401)
    t.equal((await attempt('victim')).statusCode, 401)
    const limited = await attempt('victim')
    t.equal(limited.statusCode, 429)
    t.equal(json(limited).code, 'RateLimited')
    t.ok(Number(limited.headers['retry-after']) >= 1)
    t.equal((await attempt('other')).statusCode, 401, 'another username from the same IP is counted apart')
    const right = await app.inject({ method: 'POST', url: '/v1/auth/token', remoteAddress: ip, payload: { username: 'victim', password: PASSWORD } })
    t.equal(right.statusCode, 429)
  })
}

t.test('redis: two instances share one count', async (t) => {
  const ip = clientIp()
  await forgetKeys(t, ip)
  const database = await freshDatabase(t)
  const env = { REDIS_URL, RATE_LIMIT_MAX: '3' }
  const a = await build(t, { env, database })
  const b = await build(t, { env, database })
  t.equal((await get(a, ip)).statusCode, 200)
  t.equal((await get(b, ip)).statusCode, 200)
  t.equal((await get(a, ip)).statusCode, 200)
  t.equal((await get(b, ip)).statusCode, 429, 'the fourth request is refused whichever instance answers it')
})

t.test('memory: two instances count apart (why REDIS_URL exists)', async (t) => {
  const ip = clientIp()
  const database = await freshDatabase(t)
  const a = await build(t, { env: { RATE_LIMIT_MAX: '1' }, database })
  const b = await build(t, { env: { RATE_LIMIT_MAX: '1' }, database })
  t.equal((await get(a, ip)).statusCode, 200)
  t.equal((await get(b, ip)).statusCode, 200)
  t.equal((await get(a, ip)).statusCode, 429)
})

t.test('a Redis that does not answer does not take the API down', async (t) => {
  const app = await build(t, { env: { REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_MAX: '1' } })
  const ip = clientIp()
  t.equal((await get(app, ip)).statusCode, 200)
  t.equal((await get(app, ip)).statusCode, 200, 'the limit is skipped, not enforced from nothing')
})
