import type { AddressInfo } from 'node:net'
import t from 'tap'
import { build, json } from '../../helper.js'

t.test('GET /health answers 200 with the database check', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  t.same(json(res), { status: 'ok', checks: { database: 'ok' } })
})

t.test('GET /health answers 503 when the database is gone', async (t) => {
  const app = await build(t)
  await app.db.destroy()
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 503)
  t.same(json(res), { status: 'unavailable', checks: { database: 'unavailable' } })
})

t.test('GET /version names the package version, the API versions and the commit', async (t) => {
  const app = await build(t, { env: { GIT_COMMIT: 'abc123' } })
  const res = await app.inject({ method: 'GET', url: '/version' })
  t.equal(res.statusCode, 200)
  const body = json(res)
  t.match(body.version, /^\d+\.\d+\.\d+/)
  t.same(body.api_versions, ['v1', 'v2'])
  t.equal(body.commit, 'abc123')
})

t.test('every validator and serializer compiles at start with SCHEMA_COMPILE=eager', async (t) => {
  // The default compiles each schema on first use; this proves none of them is broken.
  const app = await build(t, { env: { SCHEMA_COMPILE: 'eager' } })
  const res = await app.inject({ method: 'GET', url: '/v1/posts?limit=1' })
  t.equal(res.statusCode, 200)
  t.ok(app.printRoutes().includes('posts'))
})

t.test('a lazily compiled validator still reports every failing rule', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/v1/posts?limit=0&offset=-1' })
  t.equal(res.statusCode, 422)
  t.same(json(res).errors.map((e: { field: string }) => e.field).sort(), ['/limit', '/offset'])
})

t.test('on close, SHUTDOWN_DRAIN_MS of /health 503 while the other routes are still served, then the listener closes', async (t) => {
  const app = await build(t, { env: { SHUTDOWN_DRAIN_MS: '600' } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  t.equal((await fetch(`${url}/health`)).status, 200, 'healthy before the close')
  const started = Date.now()
  const state = { done: false }
  const closed = app.close().then(() => { state.done = true })
  // close() reaches its preClose hook after a few turns of the loop, which a loaded machine can
  // stretch past one health check: /health must turn 503 before the close is over.
  let health = await fetch(`${url}/health`)
  while (health.status === 200 && !state.done) health = await fetch(`${url}/health`)
  t.equal(health.status, 503, 'draining: the balancer is told to stop sending')
  t.notOk(state.done, 'before the listener closed')
  t.same(await health.json(), { status: 'unavailable', checks: { database: 'ok' } })
  const version = await fetch(`${url}/version`)
  t.equal(version.status, 200, 'while requests still get answers')
  t.equal(version.headers.get('connection'), 'close', 'on connections that close after them')
  await closed
  t.ok(Date.now() - started >= 600, 'the listener closed after the drain') // a lower bound: load only makes it later
  await t.rejects(fetch(`${url}/version`), 'and then refuses connections')
})

t.test('without SHUTDOWN_DRAIN_MS a close does not wait', async (t) => {
  const [app, draining] = [await build(t), await build(t, { env: { SHUTDOWN_DRAIN_MS: '600' } })]
  await app.listen({ host: '127.0.0.1', port: 0 })
  await draining.listen({ host: '127.0.0.1', port: 0 })
  // both closed at once, on the same loaded machine: an order, not a time
  const first = await Promise.race([app.close().then(() => 'without'), draining.close().then(() => 'with a drain')])
  t.equal(first, 'without', 'it is over before a close that drains for 600 ms')
})
