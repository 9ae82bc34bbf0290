import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Type } from '../../schemas/typebox.js'
import type { FastifyInstance } from 'fastify'
import { sql } from '../../src/db/kysely.js'
import t, { type Test } from 'tap'
import app from '../../src/app.js'
import { ConfigError } from '../../plugins/config.js'
import { enqueueEmail } from '../../src/domain/outbox.js'
import { createUser } from '../fixtures.js'
import { build, dialect, json, migratedDatabase, testConfig, testFastify } from '../helper.js'
import { metricSamples as samples } from '../../scripts/proc.js'
import { ROOT } from '../../src/package-info.js'

const ID = '3b241101-e2bb-4255-8caf-4136c566a962'
// prom-client's own gauges whose names end in _total; promtool flags them, nothing else may be flagged.
const KNOWN_FINDINGS = /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/

/** The real app plus one parametric route, registered before ready. */
async function buildWithRoute (t: Test, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const database = await migratedDatabase(t) // up to date: the app runs no Migrator, and needs no migration lock
  const config = testConfig(env, database.url)
  const server = testFastify(config)
  await server.register(app, { config, dbSchema: database.schema, dbImage: database.image })
  server.get(
    '/things/:thingId',
    {
      schema: { params: Type.Object({ thingId: Type.String({ format: 'uuid' }) }, { additionalProperties: false }) }
    },
    async request => request.params
  )
  await server.ready()
  t.teardown(() => server.close())
  return server
}

async function scrape (server: FastifyInstance): Promise<string> {
  const res = await server.inject({ method: 'GET', url: '/metrics' })
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}: ${res.body}`)
  return res.body
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

t.test('GET /metrics has the request-duration histogram by method, route template and status', async t => {
  const server = await buildWithRoute(t)
  await server.inject({ method: 'GET', url: `/things/${ID}` })
  await server.inject({ method: 'GET', url: '/things/3b241101-e2bb-4255-8caf-000000000000' })
  await server.inject({ method: 'GET', url: '/things/not-a-uuid' })
  await server.inject({ method: 'GET', url: '/version' })
  await server.inject({ method: 'GET', url: '/health' })
  const res = await server.inject({ method: 'GET', url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain/)
  const text = res.body

  t.match(text, /^# TYPE http_request_duration_seconds histogram$/m)
  const counts = samples(text, 'http_request_duration_seconds_count')
  const thing = counts.filter(s => s.labels.route === '/things/:thingId')
  t.same(
    thing.map(s => s.labels).sort((a, b) => a.status_code.localeCompare(b.status_code)),
    [
      { method: 'GET', route: '/things/:thingId', status_code: '200' },
      { method: 'GET', route: '/things/:thingId', status_code: '422' }
    ],
    'labelled by the template, method and status'
  )
  t.equal(thing.find(s => s.labels.status_code === '200')?.value, 2, 'both ids count in one series')
  t.notMatch(text, new RegExp(ID), 'no per-URL series')
  t.notMatch(text, /not-a-uuid/)
  t.ok(counts.some(s => s.labels.route === '/version' && s.labels.status_code === '200'))
  t.notOk(
    counts.some(s => s.labels.route === '/health'),
    "a balancer's health checks stay out of it (they would dilute the 5xx share)"
  )
  t.ok(samples(text, 'http_request_duration_seconds_sum').length > 0, 'a sum, so average = sum/count')
  const buckets = samples(text, 'http_request_duration_seconds_bucket').filter(
    s => s.labels.route === '/things/:thingId' && s.labels.status_code === '200'
  )
  t.ok(buckets.length > 2, 'several buckets')
  t.equal(buckets.at(-1)?.labels.le, '+Inf')
})

t.test('no summary is exposed', async t => {
  const server = await buildWithRoute(t)
  await server.inject({ method: 'GET', url: '/health' })
  const text = await scrape(server)
  t.notMatch(text, /^# TYPE \S+ summary$/m)
  t.notMatch(text, /quantile=/)
})

t.test('process and event-loop metrics are there', async t => {
  const server = await buildWithRoute(t)
  const text = await scrape(server)
  for (const name of [
    'process_cpu_seconds_total',
    'process_resident_memory_bytes',
    'process_start_time_seconds',
    'nodejs_eventloop_lag_seconds',
    'nodejs_heap_size_used_bytes',
    'nodejs_gc_duration_seconds'
  ]) {
    t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name)
  }
})

t.test('unknown URLs collapse into one __unknown__ route label', async t => {
  const server = await buildWithRoute(t)
  for (const url of ['/nope', '/nope/1', '/v1/nothing/here', `/x/${ID}`]) await server.inject({ method: 'GET', url })
  const text = await scrape(server)
  const unknown = samples(text, 'http_request_duration_seconds_count').filter(s => s.labels.route === '__unknown__')
  t.same(
    unknown.map(s => s.labels),
    [{ method: 'GET', route: '__unknown__', status_code: '404' }]
  )
  t.equal(unknown[0]?.value, 4)
  t.notMatch(text, /\/nope|\/v1\/nothing|\/x\//)
})

t.test('the output passes promtool check metrics (or the same rules when promtool is absent)', async t => {
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
    findings = `${promtool.stdout}\n${promtool.stderr}`
      .split('\n')
      .map(l => l.trim())
      .filter(Boolean)
  }
  const unexpected = findings.filter(f => !KNOWN_FINDINGS.test(f))
  t.same(unexpected, [], "nothing beyond prom-client's three nodejs_active_*_total gauges")
  t.ok(
    lint(text).every(f => KNOWN_FINDINGS.test(f)),
    'the TypeScript rules agree'
  )
})

t.test('/metrics answers while the server sheds load', async t => {
  const server = await buildWithRoute(t, { LOAD_SHEDDING: 'true', MAX_HEAP_BYTES: '1' })
  // until a sample has measured the heap and a real (finite) loop delay: before it, other checks decide
  const shedding = () => server.memoryUsage().heapUsed > 0 && Number.isFinite(server.memoryUsage().eventLoopDelay) && server.isUnderPressure()
  for (let i = 0; i < 200 && !shedding(); i++) await new Promise(resolve => setTimeout(resolve, 50))
  t.ok(server.isUnderPressure(), 'under pressure')
  t.equal((await server.inject({ method: 'GET', url: `/things/${ID}` })).statusCode, 503, 'ordinary routes are shed')
  t.equal((await server.inject({ method: 'GET', url: '/metrics' })).statusCode, 200, 'the scrape is not')
})

t.test('the TypeScript lint catches what promtool would', async t => {
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

/** The value of one sample, or undefined when the series is absent. */
function value (text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return samples(text, name).find(s => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value
}

t.test('query durations by operation, query errors, and the PostgreSQL pool (only there)', async t => {
  const server = await build(t, { env: { METRICS_CACHE_MS: '0' } })
  const before = await scrape(server)
  await createUser(server) // inserts (user, profile) and reads
  await server.db.updateTable('user').set({ username: 'nobody' }).where('id', '=', '00000000-0000-0000-0000-000000000000').execute()
  await server.db.deleteFrom('user').where('id', '=', '00000000-0000-0000-0000-000000000000').execute()
  await server.db
    .selectFrom('no_such_table' as 'user')
    .selectAll()
    .execute()
    .catch(() => {})
  const text = await scrape(server)

  t.match(text, /^# TYPE roja_db_query_duration_seconds histogram$/m)
  for (const operation of ['select', 'insert', 'update', 'delete']) {
    const was = value(before, 'roja_db_query_duration_seconds_count', { operation }) ?? 0
    t.ok((value(text, 'roja_db_query_duration_seconds_count', { operation }) ?? 0) > was, `${operation} counted`)
  }
  t.equal(
    value(text, 'roja_db_query_duration_seconds_bucket', { operation: 'update', le: '+Inf' }),
    value(text, 'roja_db_query_duration_seconds_count', { operation: 'update' })
  )
  t.equal(value(text, 'roja_db_query_errors_total', { operation: 'select' }), 1, 'the failed select, once')
  t.equal(value(text, 'roja_db_query_errors_total', { operation: 'insert' }), undefined, 'no other failure')

  if (dialect === 'postgres') {
    const inUse = value(text, 'roja_db_pool_connections', { state: 'in_use' })
    const idle = value(text, 'roja_db_pool_connections', { state: 'idle' })
    t.ok(inUse !== undefined && inUse <= 1, 'nothing checked out between requests (but a health check in flight)')
    t.ok(idle !== undefined && idle >= 1, 'the connections used stay idle in the pool')
    t.equal(value(text, 'roja_db_pool_waiting'), 0)
    t.equal(value(text, 'roja_db_pool_max'), 10)
    // 12 queries in flight on a pool of 10: all 10 in use, 2 waiting (the health check may add one)
    const slow = Array.from({ length: 12 }, () => sql`select pg_sleep(0.5)`.execute(server.db))
    await new Promise(resolve => setTimeout(resolve, 200))
    const during = await scrape(server)
    await Promise.all(slow)
    t.equal(value(during, 'roja_db_pool_connections', { state: 'in_use' }), 10, 'every connection in use')
    t.ok(value(during, 'roja_db_pool_waiting')! >= 2, 'the queries beyond the pool wait')
    const after = await scrape(server)
    t.ok(value(after, 'roja_db_pool_connections', { state: 'in_use' })! <= 1, 'and back after')
    t.equal(value(after, 'roja_db_pool_waiting'), 0)
  } else {
    t.notMatch(text, /roja_db_pool_/, 'SQLite has no pool to report')
  }
})

t.test('outbox: queue depth, age of the oldest undelivered message, deliveries and failures', async t => {
  const server = await build(t, { env: { METRICS_CACHE_MS: '0', SMTP_URL: 'smtp://127.0.0.1:1' }, outbox: { loop: false, maxAttempts: 2 } })
  let text = await scrape(server)
  t.equal(value(text, 'roja_outbox_pending_messages'), 0)
  t.equal(value(text, 'roja_outbox_oldest_pending_age_seconds'), 0, 'no message, no age')

  const old = await enqueueEmail(server.db, { to: 'ada@example.com', subject: 'old', body: 'x' })
  await enqueueEmail(server.db, { to: 'bob@example.com', subject: 'new', body: 'x' })
  await server.db
    .updateTable('outbox_message')
    .set({ created_at: new Date(Date.now() - 3600_000).toISOString() })
    .where('id', '=', old)
    .execute()
  text = await scrape(server)
  t.equal(value(text, 'roja_outbox_pending_messages'), 2)
  const age = value(text, 'roja_outbox_oldest_pending_age_seconds')!
  t.ok(age >= 3600 && age < 3660, `the oldest is an hour old (${age})`)

  // Port 1 refuses: each attempt fails; the second is the last (maxAttempts 2).
  t.match(await server.outbox.runOnce(), { claimed: 2, failed: 2 })
  text = await scrape(server)
  t.equal(value(text, 'roja_outbox_failed_total', { final: 'false' }), 2)
  t.equal(value(text, 'roja_outbox_pending_messages'), 2, 'still to be tried')
  await server.outbox.runOnce({ now: new Date(Date.now() + 7 * 86400_000) })
  text = await scrape(server)
  t.equal(value(text, 'roja_outbox_failed_total', { final: 'true' }), 2)
  t.equal(value(text, 'roja_outbox_pending_messages'), 0)
  t.equal(value(text, 'roja_outbox_dead_messages'), 2, 'failed for good')
  t.equal(value(text, 'roja_outbox_oldest_pending_age_seconds'), 0, 'dead messages do not age the queue')
})

t.test('outbox: an unreadable queue shows NaN, not 0 or a stale number, and the scrape still answers', async t => {
  const server = await build(t, { env: { METRICS_CACHE_MS: '0' }, outbox: { loop: false } })
  await enqueueEmail(server.db, { to: 'ada@example.com', subject: 'hi', body: 'x' })
  t.equal(value(await scrape(server), 'roja_outbox_pending_messages'), 1)
  await server.db.schema.dropTable('outbox_message').execute()
  const text = await scrape(server)
  for (const name of ['roja_outbox_pending_messages', 'roja_outbox_oldest_pending_age_seconds', 'roja_outbox_dead_messages']) {
    t.ok(Number.isNaN(value(text, name)), `${name} is NaN`)
  }
  t.match(text, /^# TYPE http_request_duration_seconds histogram$/m)
})

t.test('outbox: a delivered message leaves the queue and counts as sent', async t => {
  const server = await build(t, { env: { METRICS_CACHE_MS: '0' }, outbox: { loop: false } })
  await enqueueEmail(server.db, { to: 'ada@example.com', subject: 'hi', body: 'x' })
  t.equal(value(await scrape(server), 'roja_outbox_pending_messages'), 1)
  await server.outbox.runOnce()
  const text = await scrape(server)
  t.equal(value(text, 'roja_outbox_pending_messages'), 0)
  t.equal(value(text, 'roja_outbox_sent_total'), 1)
  t.equal(value(text, 'roja_outbox_dead_messages'), 0)
})

t.test('rate-limit refusals are counted, by limit', async t => {
  const server = await build(t, { env: { METRICS_CACHE_MS: '0', RATE_LIMIT_MAX: '2', AUTH_RATE_LIMIT_MAX: '1' } })
  const user = await createUser(server)
  const ip = '10.1.2.3'
  t.equal(value(await scrape(server), 'roja_rate_limit_refusals_total', { limit: 'global' }), undefined, 'nothing refused yet')
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await server.inject({ method: 'GET', url: '/version', remoteAddress: ip })).statusCode)
  t.same(statuses, [200, 200, 429, 429])
  const login = () =>
    server.inject({
      method: 'POST',
      url: '/v1/auth/token',
      remoteAddress: '10.9.9.9',
      payload: { username: user.username, password: 'wrong password!' }
    })
  t.equal((await login()).statusCode, 401)
  t.equal((await login()).statusCode, 429, "the token route's own limit")
  const text = await scrape(server)
  t.equal(value(text, 'roja_rate_limit_refusals_total', { limit: 'global' }), 2)
  t.equal(value(text, 'roja_rate_limit_refusals_total', { limit: 'route' }), 1)
})

t.test('load-shedding refusals are counted by the check that tripped', async t => {
  const server = await buildWithRoute(t, { LOAD_SHEDDING: 'true', MAX_HEAP_BYTES: '1', METRICS_CACHE_MS: '0' })
  for (let i = 0; i < 200 && !(server.memoryUsage().heapUsed > 0 && server.isUnderPressure()); i++) { await new Promise(resolve => setTimeout(resolve, 50)) }
  t.equal(value(await scrape(server), 'roja_load_shed_refusals_total', { reason: 'heapUsedBytes' }), undefined)
  t.equal((await server.inject({ method: 'GET', url: `/things/${ID}` })).statusCode, 503)
  t.equal((await server.inject({ method: 'GET', url: '/version' })).statusCode, 503)
  t.equal(value(await scrape(server), 'roja_load_shed_refusals_total', { reason: 'heapUsedBytes' }), 2)
})

t.test('no Node.js version unless METRICS_RUNTIME_INFO=true', async t => {
  const plain = await scrape(await buildWithRoute(t))
  t.notMatch(plain, /nodejs_version_info/)
  t.notMatch(plain, new RegExp(process.version.replace(/\./g, '\\.')), 'the version appears nowhere')
  const asked = await scrape(await buildWithRoute(t, { METRICS_RUNTIME_INFO: 'true' }))
  t.match(asked, new RegExp(`^nodejs_version_info\\{version="${process.version}"`, 'm'))
})

t.test('METRICS_TOKEN: the scrape needs the bearer token', async t => {
  const token = 'a-metrics-token-of-some-length'
  const server = await build(t, { env: { METRICS_TOKEN: token } })
  const get = (authorization?: string) => server.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} })
  for (const [authorization, why] of [
    [undefined, 'none'],
    [`Bearer ${token}x`, 'longer'],
    [`Bearer ${token.slice(0, -1)}`, 'shorter'],
    [token, 'no scheme'],
    [`Basic ${token}`, 'another scheme']
  ] as const) {
    const res = await get(authorization)
    t.equal(res.statusCode, 401, why)
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
    t.equal(res.headers['www-authenticate'], 'Bearer realm="metrics"')
    t.match(json(res), { code: 'NotAuthenticated', status: 401 })
    t.notMatch(res.body, /http_request_duration_seconds/)
  }
  const ok = await get(`Bearer ${token}`)
  t.equal(ok.statusCode, 200)
  t.match(ok.body, /^# TYPE http_request_duration_seconds histogram$/m)
  t.equal((await get(`bearer ${token}`)).statusCode, 200, 'the scheme is case-insensitive')
  t.equal((await server.inject({ method: 'GET', url: '/version' })).statusCode, 200, 'other routes need no token')
})

t.test('METRICS_ALLOW: only listed addresses and ranges may scrape; the others see no route', async t => {
  const server = await build(t, { env: { METRICS_ALLOW: '10.0.0.0/24, 192.168.1.7, fd00::/64' } })
  const from = (remoteAddress: string) => server.inject({ method: 'GET', url: '/metrics', remoteAddress })
  for (const ip of ['10.0.0.0', '10.0.0.255', '192.168.1.7', '::ffff:10.0.0.9', 'fd00::1', 'fd00::ffff:ffff:ffff:ffff']) {
    t.equal((await from(ip)).statusCode, 200, `${ip} is allowed`)
  }
  for (const ip of ['10.0.1.0', '9.255.255.255', '192.168.1.8', '127.0.0.1', 'fd00:0:0:1::1', '::1']) {
    const res = await from(ip)
    t.equal(res.statusCode, 404, `${ip} is refused`)
    t.match(json(res), { code: 'NotFound', detail: 'no route GET /metrics' })
  }
})

t.test('METRICS_ALLOW and METRICS_TOKEN together: both are needed', async t => {
  const token = 'a-metrics-token-of-some-length'
  const server = await build(t, { env: { METRICS_ALLOW: '10.0.0.1', METRICS_TOKEN: token } })
  const scrapeAs = (remoteAddress: string, authorization?: string) =>
    server.inject({ method: 'GET', url: '/metrics', remoteAddress, headers: authorization ? { authorization } : {} })
  t.equal((await scrapeAs('10.0.0.1', `Bearer ${token}`)).statusCode, 200)
  t.equal((await scrapeAs('10.0.0.1')).statusCode, 401)
  t.equal((await scrapeAs('10.0.0.2', `Bearer ${token}`)).statusCode, 404)
})

t.test('production: /metrics is closed without METRICS_TOKEN or METRICS_ALLOW, unless METRICS_PUBLIC opens it, loudly', async t => {
  const production = { ENVIRONMENT: 'production', TRUST_PROXY: '127.0.0.1' }
  const viaProxy = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' }
  const warnings = (logs: string[]) =>
    logs.map(l => JSON.parse(l) as { level: number; msg: string }).filter(l => l.level === 40 && /metrics/i.test(l.msg))

  const closedLogs: string[] = []
  const closed = await build(t, { env: production, logs: closedLogs, logLevel: 'warn' })
  const refused = await closed.inject({ method: 'GET', url: '/metrics', headers: viaProxy })
  t.equal(refused.statusCode, 404, 'nobody may scrape')
  t.match(json(refused), { code: 'NotFound' })
  t.notMatch(refused.body, /http_request_duration_seconds/)
  t.match(warnings(closedLogs), [{ msg: /closed.*METRICS_TOKEN or METRICS_ALLOW/ }], 'the start says why')

  const openLogs: string[] = []
  const open = await build(t, { env: { ...production, METRICS_PUBLIC: 'true' }, logs: openLogs, logLevel: 'warn' })
  t.equal((await open.inject({ method: 'GET', url: '/metrics', headers: viaProxy })).statusCode, 200, 'METRICS_PUBLIC=true opens it')
  t.match(warnings(openLogs), [{ msg: /METRICS_PUBLIC=true.*open to anyone/ }], 'with a warning at start')

  const token = 'a-metrics-token-of-some-length'
  const guardedLogs: string[] = []
  const guarded = await build(t, { env: { ...production, METRICS_TOKEN: token }, logs: guardedLogs, logLevel: 'warn' })
  t.equal(
    (await guarded.inject({ method: 'GET', url: '/metrics', headers: { ...viaProxy, authorization: `Bearer ${token}` } })).statusCode,
    200,
    'the token opens it'
  )
  t.same(warnings(guardedLogs), [], 'and no warning is due')
  const allowed = await build(t, { env: { ...production, METRICS_ALLOW: '203.0.113.0/24' } })
  t.equal((await allowed.inject({ method: 'GET', url: '/metrics', headers: viaProxy })).statusCode, 200, 'so does the allowlist')

  const local = await build(t)
  t.equal((await local.inject({ method: 'GET', url: '/metrics' })).statusCode, 200, 'outside production it stays open by default')
})

t.test('a bad METRICS_ALLOW or METRICS_TOKEN stops the start with a message naming it', async t => {
  for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.1/', '10.0.0.1/8/8', 'fd00::/129', '10.0.0.256']) {
    t.throws(
      () => testConfig({ METRICS_ALLOW: bad }),
      new ConfigError(`invalid configuration: METRICS_ALLOW entry "${bad}" is not an IP address or CIDR range`),
      bad
    )
  }
  t.ok(testConfig({ METRICS_ALLOW: '0.0.0.0/0,::/0' }).metricsAllow, 'the widest ranges are valid')
  t.throws(() => testConfig({ METRICS_TOKEN: 'short' }), /METRICS_TOKEN/)
})

t.test('scrapes are rate-bounded per client (429 + Retry-After) and share one rendering', async t => {
  const server = await build(t, { env: { METRICS_RATE_LIMIT_MAX: '3', METRICS_CACHE_MS: '60000' } })
  const from = (remoteAddress: string) => server.inject({ method: 'GET', url: '/metrics', remoteAddress })
  const first = await from('10.0.0.1')
  await server.inject({ method: 'GET', url: '/health' })
  const second = await from('10.0.0.1')
  t.equal(second.body, first.body, 'within METRICS_CACHE_MS the same rendering is served')
  t.equal((await from('10.0.0.1')).statusCode, 200)
  const limited = await from('10.0.0.1')
  t.equal(limited.statusCode, 429, 'the 4th scrape in a minute')
  t.match(json(limited), { code: 'RateLimited' })
  t.ok(Number(limited.headers['retry-after']) > 0)
  t.equal((await from('10.0.0.2')).statusCode, 200, 'another scraper has its own count')
  t.match(await server.metricsRegistry.getSingleMetricAsString('roja_rate_limit_refusals_total'), /limit="route"\} 1/)
})

t.test('with METRICS_CACHE_MS=0 every scrape is rendered anew', async t => {
  const server = await build(t, { env: { METRICS_CACHE_MS: '0' } })
  const first = await scrape(server)
  await server.inject({ method: 'GET', url: '/version' })
  const second = await scrape(server)
  t.not(second, first)
  t.ok(samples(second, 'http_request_duration_seconds_count').some(s => s.labels.route === '/version'))
})

t.test('the scrape stays small: under 24 KB after traffic on a dozen routes', async t => {
  const server = await build(t, { env: { METRICS_CACHE_MS: '0' } })
  const user = await createUser(server)
  for (const url of [
    '/health',
    '/version',
    '/v1/posts',
    '/v1/shops',
    '/v1/courses',
    '/v1/classes',
    `/v1/profiles/${user.id}`,
    `/v1/posts/${ID}`,
    '/nope',
    '/v1/posts?limit=abc'
  ]) {
    await server.inject({ method: 'GET', url })
  }
  const text = await scrape(server)
  t.comment(`${text.length} bytes, ${samples(text, 'http_request_duration_seconds_count').length} request series`)
  t.ok(text.length < 24 * 1024, `${text.length} bytes`)
})

t.test('every series the alert rules and the Grafana dashboard use is one /metrics exposes', async t => {
  const server = await build(t, { env: { METRICS_CACHE_MS: '0' } })
  const text = await scrape(server)
  const families = new Set(
    [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
      type === 'histogram' ? [name, `${name}_bucket`, `${name}_sum`, `${name}_count`] : [name]
    )
  )
  families.add('up') // Prometheus' own, per scrape target
  for (const file of ['ops/prometheus/alerts.yml', 'ops/grafana/roja.json']) {
    const used = new Set(readFileSync(join(ROOT, file), 'utf8').match(/\b(up|roja_\w+|http_request_\w+|nodejs_\w+|process_\w+)(?=\{|\[|\)| )/g))
    t.ok(used.size > 5, `${file} uses ${used.size} series`)
    // The pool exists on PostgreSQL only
    const missing = [...used].filter(name => !families.has(name) && !(dialect === 'sqlite' && name.startsWith('roja_db_pool_')))
    t.same(missing, [], `${file}: every series exists`)
  }
})
