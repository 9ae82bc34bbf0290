import t from 'tap'
import { build } from './helper.js'

const lines = (logs: string[]) => logs.map(l => JSON.parse(l) as Record<string, any>).filter(l => l.reqId !== undefined)

t.test('at info, one line per request, written with the answer: method, url, status, time', async (t) => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'info' })
  logs.length = 0
  await app.inject({ method: 'GET', url: '/version' })
  await app.inject({ method: 'GET', url: '/v1/nowhere' })
  const [ok, missing, ...rest] = lines(logs)
  t.same(rest, [], 'two requests, two lines')
  t.match(ok, { level: 30, msg: 'request completed', req: { method: 'GET', url: '/version' }, res: { statusCode: 200 } })
  t.type(ok.responseTime, 'number')
  t.match(missing, { msg: 'request completed', req: { url: '/v1/nowhere' }, res: { statusCode: 404 } })
  t.not(ok.reqId, missing.reqId, 'each line carries its request id')
})

t.test('at debug, the arrival is logged too', async (t) => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'debug' })
  logs.length = 0
  await app.inject({ method: 'GET', url: '/version' })
  const [arrival, done, ...rest] = lines(logs)
  t.match(arrival, { level: 20, msg: 'incoming request', req: { method: 'GET', url: '/version' } })
  t.match(done, { level: 30, msg: 'request completed', res: { statusCode: 200 } })
  t.equal(arrival.reqId, done.reqId)
  t.same(rest, [])
})

t.test('a refused request is still one line at info, carrying the problem code', async (t) => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'info' })
  logs.length = 0
  const res = await app.inject({ method: 'GET', url: '/v1/posts?limit=0' })
  t.equal(res.statusCode, 422)
  const [line, ...rest] = lines(logs)
  t.same(rest, [], 'one line, not a "refused" line and a "completed" line')
  t.match(line, { level: 30, msg: 'request completed', problem: 'ValidationFailed', res: { statusCode: 422 }, req: { url: '/v1/posts?limit=0' } })
})
