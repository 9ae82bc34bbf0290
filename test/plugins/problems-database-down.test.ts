import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import config from '../../plugins/config.js'
import problems from '../../plugins/problems.js'
import { testConfig, testFastify, whileMigrating } from '../helper.js'

/**
 * A database restarted under load drops connections in the middle of requests; pg reports some of
 * those drops with a message and no code. They are the database being away (503 + Retry-After,
 * the client retries), not a bug of ours (500). The fleet test (scripts/fleet) shows it end to end.
 */
async function bare (t: Test, thrown: () => Error): Promise<FastifyInstance> {
  const cfg = testConfig()
  const app = testFastify(cfg)
  await app.register(config, { config: cfg })
  await app.register(problems)
  app.get('/query', async () => { throw thrown() })
  await whileMigrating(() => app.ready())
  t.teardown(() => app.close())
  return app
}

// the errors exactly as pg makes them (pg/lib/client.js): a plain Error with only a message
for (const message of ['Connection terminated unexpectedly', 'Connection terminated', 'Client has encountered a connection error and is not queryable']) {
  t.test(`pg's "${message}" is a 503 with Retry-After`, async (t) => {
    const app = await bare(t, () => new Error(message))
    const res = await app.inject({ url: '/query' })
    t.equal(res.statusCode, 503)
    t.equal(res.headers['retry-after'], '5')
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.equal(res.json().code, 'ServiceUnavailable')
    t.notMatch(res.body, message, 'the driver\'s words stay inside')
  })
}

t.test('any other error without a code stays a 500 that says nothing of the internals', async (t) => {
  const app = await bare(t, () => new Error('Connection to the printer lost'))
  const res = await app.inject({ url: '/query' })
  t.equal(res.statusCode, 500)
  t.equal(res.json().code, 'InternalError')
  t.equal(res.headers['retry-after'], undefined)
})

t.test('a coded error with the same words keeps its own meaning', async (t) => {
  // a client-side error of ours that happens to start alike is not read as an outage
  const app = await bare(t, () => Object.assign(new Error('Connection terminated by the client'), { statusCode: 400, code: 'FST_CUSTOM' }))
  const res = await app.inject({ url: '/query' })
  t.equal(res.statusCode, 400)
})
