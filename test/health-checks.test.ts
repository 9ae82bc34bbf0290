import t from 'tap'
import { build } from './helper.js'

/**
 * A balancer checks /health every few hundred milliseconds on every instance: those checks must
 * not be most of the log, nor of the request histogram whose 5xx share the alerts watch.
 */
const requestLines = (logs: string[]) => logs.map(l => JSON.parse(l) as Record<string, any>).filter(l => l.reqId !== undefined)

t.test('/health is logged at debug, not info; other routes still at info', async (t) => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'info' })
  logs.length = 0
  for (let i = 0; i < 5; i++) t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
  await app.inject({ method: 'GET', url: '/version' })
  t.same(requestLines(logs).map(l => l.req.url), ['/version'], 'five checks, no line; one other request, one line')

  const debugLogs: string[] = []
  const debug = await build(t, { logs: debugLogs, logLevel: 'debug' })
  debugLogs.length = 0
  await debug.inject({ method: 'GET', url: '/health' })
  const [arrival, done, ...rest] = requestLines(debugLogs)
  t.match(arrival, { level: 20, msg: 'incoming request', req: { url: '/health' } })
  t.match(done, { level: 20, msg: 'request completed', req: { url: '/health' }, res: { statusCode: 200 } })
  t.same(rest, [])
})

t.test('/health stays out of the request-duration histogram', async (t) => {
  const app = await build(t)
  for (let i = 0; i < 5; i++) await app.inject({ method: 'GET', url: '/health' })
  await app.inject({ method: 'GET', url: '/version' })
  const text = await app.metricsRegistry.getSingleMetricAsString('http_request_duration_seconds')
  t.match(text, /route="\/version"/)
  t.notMatch(text, /route="\/health"/)
})
