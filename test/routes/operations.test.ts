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
