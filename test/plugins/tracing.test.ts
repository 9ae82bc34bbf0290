import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes, randomUUID } from 'node:crypto'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { createCreator, createUser } from '../fixtures.js'
import { build, dialect, type BuildOptions } from '../helper.js'
import { insertPost } from '../post-fixtures.js'

const dbSystem = dialect === 'postgres' ? 'postgresql' : 'sqlite'

async function traced (
  t: Test,
  opts: BuildOptions = {}
): Promise<{ app: FastifyInstance; spans: () => ReadableSpan[]; exporter: InMemorySpanExporter }> {
  const exporter = new InMemorySpanExporter()
  const app = await build(t, { ...opts, tracing: { exporter } })
  return { app, exporter, spans: () => exporter.getFinishedSpans() }
}

const parentId = (span: ReadableSpan) => span.parentSpanContext?.spanId
const childrenOf = (spans: ReadableSpan[], parent: ReadableSpan) => spans.filter(s => parentId(s) === parent.spanContext().spanId)
const one = (t: Test, spans: ReadableSpan[], name: string): ReadableSpan => {
  const found = spans.filter(s => s.name === name)
  t.equal(found.length, 1, `one span "${name}" (of ${spans.map(s => s.name).join(', ')})`)
  return found[0]
}

t.test('off by default: no SDK plugin, no hooks, no decorators, no trace ids in logs', async t => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'info' })
  t.notOk(app.hasPlugin('tracing'))
  t.notOk(app.hasPlugin('@fastify/otel'))
  t.notOk(app.hasDecorator('traced'))
  t.notOk(app.hasRequestDecorator('opentelemetry'))
  // Where @opentelemetry/api keeps what an SDK registers: nothing was.
  t.equal(
    (globalThis as Record<symbol, { trace?: unknown } | undefined>)[Symbol.for('opentelemetry.js.api.1')]?.trace,
    undefined,
    'no tracer provider registered'
  )
  const res = await app.inject({
    method: 'GET',
    url: '/version',
    headers: { traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01` }
  })
  t.equal(res.statusCode, 200)
  t.notMatch(logs.join(''), /trace_id/)
})

t.test('a request: a SERVER span named by the route template, the handler and its queries below it', async t => {
  const { app, spans } = await traced(t)
  const creator = await createCreator(app)
  const postId = await insertPost(app, creator.id, { title: 'Traced post' })
  const res = await app.inject({ method: 'GET', url: `/v1/posts/${postId}`, headers: creator.headers })
  t.equal(res.statusCode, 200)

  const all = spans()
  const server = one(t, all, 'GET /v1/posts/:postId')
  t.equal(server.kind, SpanKind.SERVER)
  t.equal(parentId(server), undefined, 'a new trace')
  t.match(server.attributes, { 'http.route': '/v1/posts/:postId', 'http.request.method': 'GET', 'http.response.status_code': 200 })
  t.equal(server.resource.attributes['service.name'], 'roja', 'OTEL_SERVICE_NAME defaults to roja')
  t.equal(server.status.code, SpanStatusCode.UNSET)
  const trace = all.filter(s => s.spanContext().traceId === server.spanContext().traceId)
  const handler = childrenOf(trace, server).find(s => s.name === 'handler /v1/posts/:postId')
  t.ok(handler, 'a handler span under the request span')
  const queries = trace.filter(s => s.kind === SpanKind.CLIENT)
  t.ok(queries.length >= 2, `the ban check and the post read (${queries.map(q => q.name).join(', ')})`)
  for (const q of queries) {
    t.equal(q.attributes['db.system.name'], dbSystem)
    t.type(q.attributes['db.query.text'], 'string')
    t.ok(parentId(q) === server.spanContext().spanId || parentId(q) === handler!.spanContext().spanId, `${q.name} is a child of the request`)
  }
  const postRead = queries.find(q => q.name === 'select post' && parentId(q) === handler!.spanContext().spanId)
  t.ok(postRead, 'the post is read inside the handler span')
  t.equal(postRead!.attributes['db.operation.name'], 'select')
  t.equal(postRead!.attributes['db.collection.name'], 'post')
  t.ok(postRead!.duration[0] > 0 || postRead!.duration[1] > 0, 'the query has a duration')
  t.notMatch(JSON.stringify(queries.map(q => q.attributes)), new RegExp(postId), 'query text carries placeholders, not values')
  t.equal(all.length, trace.length, 'nothing outside the request trace')
})

t.test("W3C traceparent and tracestate are accepted: the request joins the caller's trace", async t => {
  const { app, spans } = await traced(t)
  const traceId = randomBytes(16).toString('hex')
  const callerSpan = randomBytes(8).toString('hex')
  await app.inject({ method: 'GET', url: '/version', headers: { traceparent: `00-${traceId}-${callerSpan}-01`, tracestate: 'vendor=abc,other=x1' } })
  const server = one(t, spans(), 'GET /version')
  t.equal(server.spanContext().traceId, traceId)
  t.equal(parentId(server), callerSpan)
  t.equal(server.spanContext().traceState?.serialize(), 'vendor=abc,other=x1', 'tracestate carried on')
  t.equal(server.spanContext().traceFlags, 1, 'sampled, as the caller asked')

  for (const bad of ['00-00000000000000000000000000000000-0000000000000000-01', 'not-a-traceparent', `00-${traceId}-${callerSpan}`]) {
    await app.inject({ method: 'GET', url: '/version', headers: { traceparent: bad } })
    const latest = spans().at(-1)!
    t.equal(parentId(latest), undefined, `"${bad}" is ignored: a new trace`)
    t.not(latest.spanContext().traceId, traceId)
  }
})

t.test('an error request: the problem is recorded on the request and handler spans', async t => {
  const { app, spans } = await traced(t)
  const user = await createUser(app)
  const res = await app.inject({ method: 'GET', url: `/v1/posts/${randomUUID()}`, headers: user.headers })
  t.equal(res.statusCode, 404)
  const all = spans()
  const server = one(t, all, 'GET /v1/posts/:postId')
  t.equal(server.attributes['http.response.status_code'], 404)
  t.equal(server.status.code, SpanStatusCode.ERROR)
  const handler = childrenOf(all, server).find(s => s.name === 'handler /v1/posts/:postId')!
  t.equal(handler.status.code, SpanStatusCode.ERROR)
  t.match(handler.events.find(e => e.name === 'exception')?.attributes, { 'exception.type': 'PostNotFound', 'exception.message': /post/i })
  t.ok(
    childrenOf(all, handler).some(s => s.name === 'select post'),
    'the read that found nothing is there'
  )

  await app.inject({ method: 'GET', url: '/no/such/route' })
  const unknown = spans()
    .filter(s => s.kind === SpanKind.SERVER)
    .at(-1)!
  t.equal(unknown.name, 'GET', 'no route: the method alone')
  t.notOk(
    childrenOf(spans(), unknown).some(s => s.name === 'notFoundHandler'),
    'answered at onRequest, before the not-found handler (and any body) runs'
  )
  t.equal(unknown.attributes['http.response.status_code'], 404)
})

t.test('a failing query is a failed span', async t => {
  const { app, spans } = await traced(t)
  await app.traced(
    'work',
    {},
    async () =>
      await app.db
        .selectFrom('no_such_table' as 'user')
        .selectAll()
        .execute()
        .catch(() => {})
  )
  const all = spans()
  const work = one(t, all, 'work')
  const query = one(t, all, 'select no_such_table')
  t.equal(parentId(query), work.spanContext().spanId)
  t.equal(query.status.code, SpanStatusCode.ERROR)
  t.ok(query.events.some(e => e.name === 'exception'))
})

t.test('every log line of a traced request carries its trace and span ids', async t => {
  const logs: string[] = []
  const { app, spans } = await traced(t, { logs, logLevel: 'info' })
  const user = await createUser(app)
  await app.inject({ method: 'GET', url: `/v1/posts/${randomUUID()}`, headers: user.headers })
  await app.inject({ method: 'GET', url: '/version' })
  const lines = logs.map(l => JSON.parse(l)).filter(l => l.reqId)
  t.ok(lines.length >= 2, 'one completion line per request (the refusal carries its code on it)')
  for (const server of spans().filter(s => s.kind === SpanKind.SERVER)) {
    const mine = lines.filter(l => l.trace_id === server.spanContext().traceId)
    t.ok(mine.length >= 1, `${server.name} has its lines`)
    t.ok(mine.every(l => l.span_id === server.spanContext().spanId))
    t.ok(mine.some(l => l.msg === 'request completed'))
  }
  t.same(
    lines.filter(l => !l.trace_id),
    [],
    'no request line without a trace id'
  )
})

t.test('a background e-mail: queued in the request trace, delivered in a span of its own', async t => {
  const { app, spans, exporter } = await traced(t, { outbox: { loop: false } })
  const user = await createUser(app, { verified: true })
  // the verification link goes out first, so the round below delivers the summary alone
  t.match(await app.outbox.runOnce(), { sent: 1 })
  exporter.reset()
  const res = await app.inject({ method: 'POST', url: `/v1/users/${user.id}/email`, headers: user.headers })
  t.equal(res.statusCode, 202)
  const request = one(t, spans(), 'POST /v1/users/:userId/email')
  const insert = spans().find(s => s.name === 'insert outbox_message')
  t.ok(insert, 'the message is queued inside the request')
  t.equal(insert!.spanContext().traceId, request.spanContext().traceId)
  exporter.reset()

  t.match(await app.outbox.runOnce(), { sent: 1 })
  const all = spans()
  const delivery = one(t, all, 'outbox deliver')
  t.equal(parentId(delivery), undefined, 'a trace of its own')
  t.equal(delivery.status.code, SpanStatusCode.UNSET)
  const id = (await app.db.selectFrom('outbox_message').select('id').where('subject', '=', 'Your Roja account summary').executeTakeFirstOrThrow()).id
  t.match(delivery.attributes, { 'messaging.message.id': id, 'roja.outbox.attempt': 1 })
  const marks = childrenOf(all, delivery).filter(s => s.name === 'update outbox_message')
  t.equal(marks.length, 1, 'marking it sent is a child of the delivery')
  t.notOk(
    all.some(s => s.name.startsWith('select outbox_message') && parentId(s) === undefined),
    'the idle claim is not a trace'
  )
})

t.test('a failed delivery is a failed span', async t => {
  const { app, spans } = await traced(t, { env: { SMTP_URL: 'smtp://127.0.0.1:1' }, outbox: { loop: false } })
  const { enqueueEmail } = await import('../../src/domain/outbox.js')
  await enqueueEmail(app.db, { to: 'ada@example.com', subject: 'x', body: 'y' })
  t.match(await app.outbox.runOnce(), { failed: 1 })
  const delivery = one(t, spans(), 'outbox deliver')
  t.equal(delivery.status.code, SpanStatusCode.ERROR)
  t.match(delivery.status.message, /ECONNREFUSED/)
})

t.test('/metrics and /health are not traced', async t => {
  const { app, spans } = await traced(t)
  await app.inject({ method: 'GET', url: '/metrics' })
  await app.inject({ method: 'GET', url: '/health' })
  await app.inject({ method: 'GET', url: '/health?x=1' })
  t.same(
    spans().map(s => s.name),
    []
  )
  await app.inject({ method: 'GET', url: '/version' })
  t.same(
    spans()
      .map(s => s.name)
      .sort(),
    ['GET /version', 'handler /version']
  )
})

/** A stand-in OTLP collector: records what the exporter POSTs. */
async function collector (t: Test): Promise<{ url: string; received: Array<{ path: string; contentType: string; body: Buffer }> }> {
  const received: Array<{ path: string; contentType: string; body: Buffer }> = []
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', body: Buffer.concat(chunks) })
      res
        .writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' })
        .end(req.headers['content-type']?.includes('json') ? '{}' : '')
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => server.close(resolve)))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

t.test('OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on: OTLP/HTTP JSON to <endpoint>/v1/traces, with OTEL_SERVICE_NAME', async t => {
  const otlp = await collector(t)
  const app = await build(t, {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: `${otlp.url}/`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'roja-test' }
  })
  t.ok(app.hasPlugin('@fastify/otel'))
  await app.inject({ method: 'GET', url: '/version' })
  await app.close() // flushes the batch
  t.equal(otlp.received.length, 1)
  const [sent] = otlp.received
  t.equal(sent.path, '/v1/traces')
  t.match(sent.contentType, /^application\/json/)
  const body = JSON.parse(sent.body.toString())
  const resource = body.resourceSpans[0].resource.attributes
  t.same(resource.find((a: { key: string }) => a.key === 'service.name')?.value, { stringValue: 'roja-test' })
  const names = body.resourceSpans[0].scopeSpans.flatMap((s: { spans: Array<{ name: string }> }) => s.spans.map(x => x.name))
  t.ok(names.includes('GET /version'), names.join(', '))
})

t.test('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as given, protobuf by default', async t => {
  const otlp = await collector(t)
  const app = await build(t, { env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/custom/traces` } })
  await app.inject({ method: 'GET', url: '/version' })
  await app.close()
  t.equal(otlp.received.length, 1)
  t.equal(otlp.received[0].path, '/custom/traces')
  t.equal(otlp.received[0].contentType, 'application/x-protobuf')
  t.ok(otlp.received[0].body.includes(Buffer.from('GET /version')), 'the span name is in the message')
})

t.test('a bad OTLP setting stops the start with a message naming it', async t => {
  const { testConfig } = await import('../helper.js')
  t.throws(() => testConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_PROTOCOL must be one of http\/protobuf, http\/json/)
  t.throws(() => testConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }), /OTEL_EXPORTER_OTLP_ENDPOINT/)
  t.notOk(testConfig({}).tracing)
  t.ok(testConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }).tracing)
})
