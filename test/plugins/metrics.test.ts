import { spawnSync } from 'node:child_process'
import { Type } from '@sinclair/typebox'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import app from '../../src/app.js'
import { serverOptions } from '../../src/options.js'
import { freshDatabase, testConfig } from '../helper.js'

const ID = '3b241101-e2bb-4255-8caf-4136c566a962'
// prom-client's own gauges whose names end in _total; promtool flags them, nothing else may be flagged.
const KNOWN_FINDINGS = /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/

/** The real app plus one parametric route, registered before ready. */
async function buildWithRoute (t: Test, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const database = await freshDatabase(t)
  const config = testConfig(env, database.url)
  const server = Fastify(serverOptions(config))
  await server.register(app, { config, dbSchema: database.schema })
  server.get('/things/:thingId', {
    schema: { params: Type.Object({ thingId: Type.String({ format: 'uuid' }) }, { additionalProperties: false }) }
  }, async (request) => request.params)
  await server.ready()
  t.teardown(() => server.close())
  return server
}

async function scrape (server: FastifyInstance): Promise<string> {
  const res = await server.inject({ method: 'GET', url: '/metrics' })
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}: ${res.body}`)
  return res.body
}

/** `name{labels} value` lines of one metric family. */
function samples (text: string, name: string): Array<{ labels: Record<string, string>, value: number }> {
  return text.split('\n').filter(l => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).map((line) => {
    const labels: Record<string, string> = {}
    const inner = /\{(.*)\}/.exec(line)?.[1] ?? ''
    for (const m of inner.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]] = m[2]
    return { labels, value: Number(line.slice(line.lastIndexOf(' ') + 1)) }
  })
}

/**
 * The rules promtool's `check metrics` lints by, for machines without promtool:
 * HELP and TYPE for every family, counters end in _total and nothing else does,
 * histograms expose _bucket (with le, ending at +Inf), _sum and _count.
 */
function lint (text: string): string[] {
  const findings: string[] = []
  const types = new Map<string, string>()
  const helps = new Set<string>()
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line)
    if (type) types.set(type[1], type[2])
    const help = /^# HELP (\S+) /.exec(line)
    if (help) helps.add(help[1])
  }
  for (const [name, type] of types) {
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) findings.push(`${name} invalid metric name`)
    if (!helps.has(name)) findings.push(`${name} no help text`)
    if (type === 'counter' && !name.endsWith('_total')) findings.push(`${name} counter metrics should have "_total" suffix`)
    if (type !== 'counter' && name.endsWith('_total')) findings.push(`${name} non-counter metrics should not have "_total" suffix`)
    if (type === 'histogram') {
      const buckets = samples(text, `${name}_bucket`)
      if (buckets.some(b => b.labels.le === undefined)) findings.push(`${name} bucket without le`)
      if (buckets.length > 0 && !buckets.some(b => b.labels.le === '+Inf')) findings.push(`${name} no +Inf bucket`)
    }
  }
  return findings
}

t.test('GET /metrics has the request-duration histogram by method, route template and status', async (t) => {
  const server = await buildWithRoute(t)
  await server.inject({ method: 'GET', url: `/things/${ID}` })
  await server.inject({ method: 'GET', url: '/things/3b241101-e2bb-4255-8caf-000000000000' })
  await server.inject({ method: 'GET', url: '/things/not-a-uuid' })
  await server.inject({ method: 'GET', url: '/health' })
  const res = await server.inject({ method: 'GET', url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain/)
  const text = res.body

  t.match(text, /^# TYPE http_request_duration_seconds histogram$/m)
  const counts = samples(text, 'http_request_duration_seconds_count')
  const thing = counts.filter(s => s.labels.route === '/things/:thingId')
  t.same(thing.map(s => s.labels).sort((a, b) => a.status_code.localeCompare(b.status_code)), [
    { method: 'GET', route: '/things/:thingId', status_code: '200' },
    { method: 'GET', route: '/things/:thingId', status_code: '422' }
  ], 'labelled by the template, method and status')
  t.equal(thing.find(s => s.labels.status_code === '200')?.value, 2, 'both ids count in one series')
  t.notMatch(text, new RegExp(ID), 'no per-URL series')
  t.notMatch(text, /not-a-uuid/)
  t.ok(counts.some(s => s.labels.route === '/health' && s.labels.status_code === '200'))
  t.ok(samples(text, 'http_request_duration_seconds_sum').length > 0, 'a sum, so average = sum/count')
  const buckets = samples(text, 'http_request_duration_seconds_bucket').filter(s => s.labels.route === '/things/:thingId' && s.labels.status_code === '200')
  t.ok(buckets.length > 2, 'several buckets')
  t.equal(buckets.at(-1)?.labels.le, '+Inf')
})

t.test('no summary is exposed', async (t) => {
  const server = await buildWithRoute(t)
  await server.inject({ method: 'GET', url: '/health' })
  const text = await scrape(server)
  t.notMatch(text, /^# TYPE \S+ summary$/m)
  t.notMatch(text, /quantile=/)
})

t.test('process and event-loop metrics are there', async (t) => {
  const server = await buildWithRoute(t)
  const text = await scrape(server)
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'process_start_time_seconds', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds']) {
    t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name)
  }
})

t.test('unknown URLs collapse into one __unknown__ route label', async (t) => {
  const server = await buildWithRoute(t)
  for (const url of ['/nope', '/nope/1', '/v1/nothing/here', `/x/${ID}`]) await server.inject({ method: 'GET', url })
  const text = await scrape(server)
  const unknown = samples(text, 'http_request_duration_seconds_count').filter(s => s.labels.route === '__unknown__')
  t.same(unknown.map(s => s.labels), [{ method: 'GET', route: '__unknown__', status_code: '404' }])
  t.equal(unknown[0]?.value, 4)
  t.notMatch(text, /\/nope|\/v1\/nothing|\/x\//)
})

t.test('the output passes promtool check metrics (or the same rules when promtool is absent)', async (t) => {
  const server = await buildWithRoute(t)
  await server.inject({ method: 'GET', url: `/things/${ID}` })
  await server.inject({ method: 'GET', url: '/nope' })
  const text = await scrape(server)
  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
  let findings: string[]
  if (promtool.error) {
    t.comment('promtool not found: linting with the same rules in TypeScript')
    findings = lint(text)
  } else {
    findings = `${promtool.stdout}\n${promtool.stderr}`.split('\n').map(l => l.trim()).filter(Boolean)
  }
  const unexpected = findings.filter(f => !KNOWN_FINDINGS.test(f))
  t.same(unexpected, [], 'nothing beyond prom-client\'s three nodejs_active_*_total gauges')
  t.ok(lint(text).every(f => KNOWN_FINDINGS.test(f)), 'the TypeScript rules agree')
})

t.test('/metrics answers while the server sheds load', async (t) => {
  const server = await buildWithRoute(t, { LOAD_SHEDDING: 'true', MAX_HEAP_BYTES: '1' })
  // until a sample has measured the heap and a real (finite) loop delay: before it, other checks decide
  const shedding = () => server.memoryUsage().heapUsed > 0 && Number.isFinite(server.memoryUsage().eventLoopDelay) && server.isUnderPressure()
  for (let i = 0; i < 200 && !shedding(); i++) await new Promise(resolve => setTimeout(resolve, 50))
  t.ok(server.isUnderPressure(), 'under pressure')
  t.equal((await server.inject({ method: 'GET', url: `/things/${ID}` })).statusCode, 503, 'ordinary routes are shed')
  t.equal((await server.inject({ method: 'GET', url: '/metrics' })).statusCode, 200, 'the scrape is not')
})

t.test('the TypeScript lint catches what promtool would', async (t) => {
  const bad = [
    '# HELP requests_served a counter without _total',
    '# TYPE requests_served counter',
    'requests_served 1',
    '# HELP open_things_total a gauge with _total',
    '# TYPE open_things_total gauge',
    'open_things_total 1',
    '# TYPE no_help gauge',
    'no_help 1'
  ].join('\n')
  t.same(lint(bad).sort(), [
    'no_help no help text',
    'open_things_total non-counter metrics should not have "_total" suffix',
    'requests_served counter metrics should have "_total" suffix'
  ])
})
