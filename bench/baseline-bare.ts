/**
 * Baseline of the `chain` group: a bare Fastify server (no plugins, no hooks, no logging) answering
 * one route, BODY_PATH (default /version), with the bytes Roja answered there (captured by
 * bench/run.ts into BODY_FILE), and with HEADERS_FILE Roja's response headers as well. What Roja's
 * per-request chain costs is the distance to this.
 */
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'

const body = readFileSync(process.env.BODY_FILE!)
// HEADERS_FILE: Roja's own response headers too (security, CORS, rate-limit), so that both sides
// put the same bytes on the wire and the ratio shows the chain's work, not the answer's size.
const headers: Record<string, string> = process.env.HEADERS_FILE ? JSON.parse(readFileSync(process.env.HEADERS_FILE, 'utf8')) : {}
const app = Fastify()
app.get(process.env.BODY_PATH ?? '/version', (_request, reply) => {
  void reply.headers(headers).type('application/json; charset=utf-8').send(body)
})
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
