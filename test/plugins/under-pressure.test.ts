import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, json } from '../helper.js'

/** Waits (bounded) until the sampler has seen the condition; never asserts on time itself. */
async function until (condition: () => boolean, what: string) {
  for (let i = 0; i < 400; i++) {
    if (condition()) return
    await sleep(25)
  }
  throw new Error(`never happened: ${what}`)
}

function assertShed (t: Test, res: Awaited<ReturnType<FastifyInstance['inject']>>) {
  t.equal(res.statusCode, 503)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.equal(res.headers['retry-after'], '5')
  t.match(json(res), { status: 503, code: 'ServiceUnavailable', title: 'Service unavailable' })
}

t.test('a heap over MAX_HEAP_BYTES sheds requests with 503 ServiceUnavailable and Retry-After', async (t) => {
  const app = await build(t, { env: { LOAD_SHEDDING: 'true', MAX_HEAP_BYTES: '1' } })
  await until(() => app.isUnderPressure(), 'heap pressure')
  assertShed(t, await app.inject({ method: 'GET', url: '/version' }))
  // unknown routes are shed too: the check runs before routing decides anything
  const unknown = await app.inject({ method: 'GET', url: '/nowhere' })
  t.equal(unknown.statusCode, 503)
})

t.test('an RSS over MAX_RSS_BYTES sheds requests', async (t) => {
  const app = await build(t, { env: { LOAD_SHEDDING: 'true', MAX_RSS_BYTES: '1' } })
  await until(() => app.isUnderPressure(), 'rss pressure')
  assertShed(t, await app.inject({ method: 'GET', url: '/version' }))
})

t.test('event-loop delay over MAX_EVENT_LOOP_DELAY_MS sheds requests', async (t) => {
  const app = await build(t, { env: { LOAD_SHEDDING: 'true', MAX_EVENT_LOOP_DELAY_MS: '1' } })
  // samples of the boot itself are ignored, so keep the loop busy until a real sample sees it
  let res = await app.inject({ method: 'GET', url: '/version' })
  for (let i = 0; i < 200 && res.statusCode !== 503; i++) {
    const end = Date.now() + 60
    while (Date.now() < end);
    await sleep(25)
    res = await app.inject({ method: 'GET', url: '/version' })
  }
  assertShed(t, res)
})

t.test('below the thresholds nothing is shed', async (t) => {
  const app = await build(t, { env: { LOAD_SHEDDING: 'true', MAX_HEAP_BYTES: String(64 * 1024 ** 3), MAX_RSS_BYTES: String(64 * 1024 ** 3) } })
  // a loaded test machine may lag at start; once sampled calm, requests pass
  await until(() => !app.isUnderPressure() && Number.isFinite(app.memoryUsage().eventLoopDelay), 'calm after start')
  t.equal((await app.inject({ method: 'GET', url: '/version' })).statusCode, 200)
})

t.test('/health still answers under pressure, itself', async (t) => {
  const app = await build(t, { env: { LOAD_SHEDDING: 'true', MAX_HEAP_BYTES: '1' } })
  await until(() => app.isUnderPressure(), 'heap pressure')
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  t.same(json(res), { status: 'ok', checks: { database: 'ok' } })
})

t.test('a database that stops answering: requests get 503 ServiceUnavailable, /health says 503', async (t) => {
  const app = await build(t, { env: { LOAD_SHEDDING: 'true' } })
  // the start-up itself can block the loop for a sample: wait until the server is calm
  await until(() => !app.isUnderPressure() && Number.isFinite(app.memoryUsage().eventLoopDelay), 'calm after start')
  t.equal((await app.inject({ method: 'GET', url: '/version' })).statusCode, 200)
  await app.db.destroy()
  await until(() => app.isUnderPressure(), 'database health check failing')
  const res = await app.inject({ method: 'GET', url: '/version' })
  assertShed(t, res)
  t.match(json(res).detail, /backing service/)
  const health = await app.inject({ method: 'GET', url: '/health' })
  t.equal(health.statusCode, 503)
  t.same(json(health), { status: 'unavailable', checks: { database: 'unavailable' } })
})

t.test('every documented operation declares the 503 it may be shed with', async (t) => {
  const app = await build(t, { env: { LOAD_SHEDDING: 'true', ENVIRONMENT: 'local' } })
  const doc = app.openapi('v1')
  const operations = Object.entries(doc.paths as Record<string, Record<string, any>>)
    .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })))
  t.ok(operations.length > 0)
  for (const { path, method, op } of operations) {
    t.ok(op.responses?.['503'], `${method.toUpperCase()} ${path} declares 503`)
  }
})

t.test('configuration refuses a nonsensical threshold', async (t) => {
  const { loadConfig } = await import('../../plugins/config.js')
  t.throws(() => loadConfig({ MAX_EVENT_LOOP_DELAY_MS: '0' }), /MAX_EVENT_LOOP_DELAY_MS/)
  t.throws(() => loadConfig({ MAX_HEAP_BYTES: 'lots' }), /MAX_HEAP_BYTES/)
})
