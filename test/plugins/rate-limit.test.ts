import { spawn } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { build, migratedDatabase, json } from '../helper.js'
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

  t.test(`${store}: the global limit answers 429 problem+json RateLimited with Retry-After`, async t => {
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

  t.test(`${store}: the token route's stricter limit per IP and username`, async t => {
    const ip = clientIp()
    if (store === 'redis') await forgetKeys(t, ip)
    const app = await build(t, { env: { ...env, AUTH_RATE_LIMIT_MAX: '2' } })
    await createUser(app, { username: 'victim' })
    const attempt = (username: string) =>
      app.inject({ method: 'POST', url: '/v1/auth/token', remoteAddress: ip, payload: { username, password: 'wrong password' } })
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

t.test('redis: two instances share one count', async t => {
  const ip = clientIp()
  await forgetKeys(t, ip)
  const database = await migratedDatabase(t)
  const env = { REDIS_URL, RATE_LIMIT_MAX: '3' }
  const a = await build(t, { env, database })
  const b = await build(t, { env, database })
  t.equal((await get(a, ip)).statusCode, 200)
  t.equal((await get(b, ip)).statusCode, 200)
  t.equal((await get(a, ip)).statusCode, 200)
  t.equal((await get(b, ip)).statusCode, 429, 'the fourth request is refused whichever instance answers it')
})

t.test('memory: two instances count apart (why REDIS_URL exists)', async t => {
  const ip = clientIp()
  const database = await migratedDatabase(t)
  const a = await build(t, { env: { RATE_LIMIT_MAX: '1' }, database })
  const b = await build(t, { env: { RATE_LIMIT_MAX: '1' }, database })
  t.equal((await get(a, ip)).statusCode, 200)
  t.equal((await get(b, ip)).statusCode, 200)
  t.equal((await get(a, ip)).statusCode, 429)
})

t.test('a Redis that does not answer does not take the API down', async t => {
  const app = await build(t, { env: { REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_MAX: '1' } })
  const ip = clientIp()
  t.equal((await get(app, ip)).statusCode, 200)
  t.equal((await get(app, ip)).statusCode, 200, 'the limit is skipped, not enforced from nothing')
})

// ---- when the shared store fails ---------------------------------------------------------------

const storeLines = (logs: string[]) => logs.map(l => JSON.parse(l) as { level: number; msg: string }).filter(l => /rate-limit store/.test(l.msg))
const fallbacks = async (app: FastifyInstance) =>
  Number(
    /^roja_rate_limit_store_fallbacks_total (\d+)$/m.exec(
      await app.metricsRegistry.getSingleMetricAsString('roja_rate_limit_store_fallbacks_total')
    )?.[1]
  )
const wrongPassword = (app: FastifyInstance, remoteAddress: string, username = 'victim') =>
  app.inject({ method: 'POST', url: '/v1/auth/token', remoteAddress, payload: { username, password: 'wrong password' } })

t.test('Redis unreachable: the password and mail limits count in this instance (never off), the general one is skipped; one warn line', async t => {
  const logs: string[] = []
  const app = await build(t, {
    logs,
    logLevel: 'info',
    env: { REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_MAX: '2', AUTH_RATE_LIMIT_MAX: '3', MAIL_RATE_LIMIT_MAX: '2' }
  })
  await createUser(app, { username: 'victim' })
  const ip = clientIp()
  const statuses: number[] = []
  for (let n = 0; n < 6; n++) statuses.push((await wrongPassword(app, ip)).statusCode)
  t.same(statuses, [401, 401, 401, 429, 429, 429], 'three guesses, then 429, as with Redis up')
  t.equal((await wrongPassword(app, clientIp())).statusCode, 401, 'another client has its own count')

  const me = await createUser(app, { verified: true })
  const mails: number[] = []
  for (let n = 0; n < 4; n++) {
    mails.push(
      (await app.inject({ method: 'POST', url: `/v1/users/${me.id}/email`, headers: me.headers, remoteAddress: `10.77.0.${n + 1}` })).statusCode
    )
  }
  t.same(mails, [202, 202, 429, 429], 'the mail limit holds')
  const queued = await app.db.selectFrom('outbox_message').select('id').execute()
  t.equal(queued.length, 2 + 1, 'two summaries queued (and the one sign-up link of the verified user), nothing more')

  for (let n = 0; n < 4; n++) { t.equal((await get(app, ip)).statusCode, 200, `general request ${n + 1}: the general limit is skipped, the API stays up`) }

  const lines = storeLines(logs)
  t.equal(lines.length, 1, `one line for the outage, not one per request: ${JSON.stringify(lines)}`)
  t.equal(lines[0]?.level, 40, 'at warn')
  t.ok((await fallbacks(app)) >= 8, 'each request counted in memory is counted in roja_rate_limit_store_fallbacks_total')
})

/** A free loopback port: bound, read, released. */
async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise(resolve => server.close(resolve))
  return port
}

/** A Redis of this test's own (never the shared one), stopped at teardown. */
async function ownRedis (t: Test, port: number) {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  t.teardown(() => {
    child.kill('SIGKILL')
  })
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {}) // refused until the server listens
  for (let i = 0; i < 100; i++) {
    if (
      await probe.connect().then(
        () => true,
        () => false
      )
    ) { break }
    await sleep(50)
  }
  probe.disconnect()
  return child
}

t.test('Redis that stops mid-window, then comes back: the password limit never opens; one line each way', async t => {
  const port = await freePort()
  let redis = await ownRedis(t, port)
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'info', env: { REDIS_URL: `redis://127.0.0.1:${port}`, AUTH_RATE_LIMIT_MAX: '4' } })
  await createUser(app, { username: 'victim' })
  const ip = clientIp()
  t.equal((await wrongPassword(app, ip)).statusCode, 401)
  t.equal((await wrongPassword(app, ip)).statusCode, 401, 'two guesses counted in Redis')
  t.equal(await fallbacks(app), 0, 'no fallback while Redis answers')

  redis.kill('SIGKILL')
  await new Promise(resolve => redis.once('exit', resolve))
  const during: number[] = []
  for (let n = 0; n < 8; n++) during.push((await wrongPassword(app, ip)).statusCode)
  t.same(during, [401, 401, 401, 401, 429, 429, 429, 429], 'counted in this instance from the outage on: at most AUTH_RATE_LIMIT_MAX more, then 429')
  t.match(storeLines(logs), [{ level: 40, msg: /unavailable/ }], 'one warn line for the outage')
  t.ok((await fallbacks(app)) >= 8)

  redis = await ownRedis(t, port)
  let back = false
  for (let i = 0; i < 100 && !back; i++) {
    await sleep(100)
    back = storeLines(logs).length > 1
  }
  t.match(storeLines(logs), [{ level: 40 }, { level: 30, msg: /back/ }], 'one info line when it is back')
  const counted = await fallbacks(app)
  t.equal((await wrongPassword(app, ip, 'other')).statusCode, 401)
  t.equal(await fallbacks(app), counted, 'counted in Redis again')
})
