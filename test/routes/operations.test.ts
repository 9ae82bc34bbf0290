import t from 'tap'
import { build, json } from '../helper.js'

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
