import { Type } from '../../schemas/typebox.js'
import t, { type Test } from 'tap'
import config from '../../plugins/config.js'
import deprecation from '../../plugins/deprecation.js'
import metrics from '../../plugins/metrics.js'
import rateLimit from '../../plugins/rate-limit.js'
import openapi from '../../plugins/openapi.js'
import problems from '../../plugins/problems.js'
import { AppError } from '../../schemas/problems.js'
import { testConfig, testFastify, whileMigrating } from '../helper.js'

const SUNSET = 'Wed, 30 Jun 2027 00:00:00 GMT'

/** A bare app with a deprecated route (a paging Link of its own, and an error case) and a current one. */
async function build (t: Test) {
  const cfg = testConfig()
  const app = testFastify(cfg)
  await app.register(config, { config: cfg })
  await app.register(problems)
  await app.register(rateLimit)
  await app.register(metrics) // after the rate limiter, as the app registers it
  await app.register(openapi, { version: '0.0.0' })
  await app.register(deprecation)
  app.get(
    '/v1/things',
    {
      config: { deprecated: { sunset: '2027-06-30', successor: '/v2/things', since: '2026-12-01' } },
      schema: { operationId: 'listThings', querystring: Type.Object({ fail: Type.Optional(Type.Boolean()) }) }
    },
    async (request, reply) => {
      if ((request.query as { fail?: boolean }).fail) throw new AppError('NotFound', 'nothing here')
      reply.header('link', '</v1/things?offset=10>; rel="next"')
      return { things: [] }
    }
  )
  app.get(
    '/v1/gadgets',
    { config: { deprecated: { sunset: '2027-01-31', successor: '/v2/gadgets' } }, schema: { operationId: 'listGadgets' } },
    async () => ({})
  )
  app.get('/v2/things', { schema: { operationId: 'listThingsV2' } }, async () => ({ things: [] }))
  await whileMigrating(() => app.ready())
  t.teardown(() => app.close())
  return app
}

t.test('a deprecated route sends Deprecation, Sunset and a successor Link, keeping its own Link', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/v1/things' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers.deprecation, `@${Date.UTC(2026, 11, 1) / 1000}`)
  t.equal(res.headers.sunset, SUNSET)
  t.equal(res.headers.link, '</v1/things?offset=10>; rel="next", </v2/things>; rel="successor-version"')
})

t.test('without a since date the Deprecation header is true', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/v1/gadgets' })
  t.equal(res.headers.deprecation, 'true')
  t.equal(res.headers.sunset, 'Sun, 31 Jan 2027 00:00:00 GMT')
  t.equal(res.headers.link, '</v2/gadgets>; rel="successor-version"')
})

t.test('error answers of a deprecated route carry the headers too', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/v1/things?fail=true' })
  t.equal(res.statusCode, 404)
  t.equal(res.headers.sunset, SUNSET)
  t.equal(res.headers.link, '</v2/things>; rel="successor-version"')
})

t.test('a route that is not deprecated sends none of them', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/v2/things' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers.deprecation, undefined)
  t.equal(res.headers.sunset, undefined)
  t.equal(res.headers.link, undefined)
})

t.test('calls to deprecated routes are counted in /metrics by route and method', async t => {
  const app = await build(t)
  for (let i = 0; i < 3; i++) await app.inject({ method: 'GET', url: '/v1/things' })
  await app.inject({ method: 'GET', url: '/v1/things?fail=true' })
  await app.inject({ method: 'GET', url: '/v2/things' })
  const res = await app.inject({ method: 'GET', url: '/metrics' })
  t.match(res.body, /roja_deprecated_route_calls_total\{route="\/v1\/things",method="GET"\} 4\n/)
  t.notMatch(res.body, /roja_deprecated_route_calls_total\{route="\/v2\/things"/)
  t.notMatch(res.body, /roja_deprecated_route_calls_total\{route="\/v1\/gadgets"/)
})

t.test('the OpenAPI operation is flagged deprecated', async t => {
  const app = await build(t)
  const v1 = app.openapi('v1')
  t.equal(v1.paths['/v1/things'].get.deprecated, true)
  t.equal(app.openapi('v2').paths['/v2/things'].get.deprecated, undefined)
  // and its answers declare the headers it sends
  for (const response of Object.values<Record<string, any>>(v1.paths['/v1/things'].get.responses)) {
    t.same(
      Object.keys(response.headers ?? {})
        .filter(h => ['Deprecation', 'Sunset', 'Link'].includes(h))
        .sort(),
      ['Deprecation', 'Link', 'Sunset']
    )
  }
  t.same(v1.components.headers.Sunset.required, true)
  t.equal(app.openapi('v2').paths['/v2/things'].get.responses['200'].headers?.Sunset, undefined)
})

t.test('a malformed sunset date stops the start', async t => {
  const cfg = testConfig()
  const app = testFastify(cfg)
  t.teardown(() => app.close())
  await app.register(metrics)
  await app.register(deprecation)
  await t.rejects(async () => {
    app.get('/v1/things', { config: { deprecated: { sunset: '30 June 2027', successor: '/v2/things' } } }, async () => ({}))
    await whileMigrating(() => app.ready())
  }, /deprecated.sunset of \/v1\/things must be YYYY-MM-DD/)
})
