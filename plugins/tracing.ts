import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { performance } from 'node:perf_hooks'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from './config.js'
import { queryChannel, type QueryMessage } from './db.js'

export interface TracingOptions {
  /** where finished spans go, one by one (tests give an InMemorySpanExporter); default: OTLP/HTTP from config */
  exporter?: SpanExporter
  /** the service's version (`service.version`, and the tracer's) */
  version: string
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Runs `fn` in a span of its own (a child of the active one, or a new trace), so the queries
     * it makes become its children. A thrown or returned Error marks the span failed.
     * Decorated only while tracing is on: callers check `hasDecorator('traced')`.
     */
    traced: <T>(name: string, attributes: Attributes, fn: () => Promise<T>) => Promise<T>
  }
}

// Scrapes and health checks every few seconds would drown the traces that matter.
const UNTRACED = /^\/(metrics|health)(\?|$)/

/**
 * OpenTelemetry tracing, loaded only when an OTLP endpoint is set: a SERVER span per request
 * (@fastify/otel, parented to an incoming `traceparent`) with a handler child, spans for queries
 * and outbox deliveries, and `trace_id`/`span_id` on every log line of a traced request.
 */
export default fp<TracingOptions>(async (fastify, opts) => {
  const { config } = fastify
  const { version } = opts
  const exporter = opts.exporter ?? await otlpExporter(config)
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.OTEL_SERVICE_NAME, [ATTR_SERVICE_VERSION]: version }),
    // Batches in production; one by one for a test's in-memory exporter, so spans are there when the answer is.
    spanProcessors: [opts.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)]
  })
  // Global: @fastify/otel reads the active context and the propagator (W3C trace context) through the API.
  provider.register()
  const tracer = provider.getTracer('roja', version)

  const instrumentation = new FastifyOtelInstrumentation({
    // The request and handler spans; a span per lifecycle hook would be a dozen per request.
    instrumentHooks: false,
    ignorePaths: (route: { url: string }) => UNTRACED.test(route.url),
    requestHook: (span: Span, request: FastifyRequest) => {
      // Semantic conventions: `{method} {route template}`, the method alone when no route matched.
      span.updateName(request.routeOptions.url ? `${request.method} ${request.routeOptions.url}` : request.method)
    },
    // Otherwise named after the chain of plugins it was registered in: hundreds of characters.
    lifecycleHook: (span: Span, info: { hookName: string, request: FastifyRequest }) => {
      span.updateName(info.hookName === 'handler' ? `handler ${info.request.routeOptions.url}` : info.hookName)
    }
  })
  instrumentation.setTracerProvider(provider)
  await fastify.register(instrumentation.plugin())

  // Registered after @fastify/otel's own onRequest, so the request span is active here.
  fastify.addHook('onRequest', async (request, reply) => {
    const span = trace.getSpan(context.active())
    if (!span) return
    const { traceId, spanId } = span.spanContext()
    request.log = reply.log = request.log.child({ trace_id: traceId, span_id: spanId })
  })

  fastify.decorate('traced', async <T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> => {
    return await tracer.startActiveSpan(name, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
      try {
        const result = await fn()
        if (result instanceof Error) fail(span, result)
        return result
      } catch (err) {
        fail(span, err as Error)
        throw err
      } finally {
        span.end()
      }
    })
  })

  // The app's database is DATABASE_URL's: its scheme names the system.
  const system = config.databaseUrl.startsWith('postgres') ? 'postgresql' : 'sqlite'
  // A span per query inside a traced request or delivery (parent: the active span); queries
  // outside one (health checks, the outbox's idle polls) are not traced.
  const onQuery = (message: unknown) => {
    const { db, event } = message as QueryMessage
    if (db !== fastify.db) return
    const parent = context.active()
    if (!trace.getSpan(parent)) return
    const end = performance.now()
    const sql = event.query.sql
    const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toLowerCase() ?? 'query'
    const table = /\b(?:from|into|update)\s+"?(\w+)"?/i.exec(sql)?.[1]
    const span = tracer.startSpan(table ? `${operation} ${table}` : operation, {
      kind: SpanKind.CLIENT,
      startTime: end - event.queryDurationMillis,
      attributes: { 'db.system.name': system, 'db.operation.name': operation, 'db.collection.name': table, 'db.query.text': sql }
    }, parent)
    if (event.level === 'error') fail(span, event.error as Error)
    span.end(end)
  }
  subscribe(queryChannel.name, onQuery)

  fastify.addHook('onClose', async () => {
    unsubscribe(queryChannel.name, onQuery)
    await provider.shutdown() // flushes what is batched
    // Frees the globals, so another app in the same process (tests) can register its own.
    trace.disable()
    context.disable()
    propagation.disable()
  })
}, { name: 'tracing', dependencies: ['config'] })

function fail (span: Span, err: Error): void {
  span.recordException(err)
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message })
}

/** OTLP over HTTP, protobuf by default or JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json); headers and timeouts from the other OTEL_* variables. */
async function otlpExporter (config: Config): Promise<SpanExporter> {
  // The signal-specific endpoint is used as given; the base one gets the traces path appended (OTLP spec).
  const url = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${config.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, '')}/v1/traces`
  if (config.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http')
    return new OTLPTraceExporter({ url })
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto')
  return new OTLPTraceExporter({ url })
}
