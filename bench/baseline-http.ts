/**
 * Baseline (a) of the list benchmark: a bare node:http server answering every request with the
 * bytes Roja's GET /v1/posts?limit=10 answered (captured by bench/run.ts into BODY_FILE).
 * No routing, no parsing, no database: the physical limit of HTTP on this machine.
 */
import { readFileSync } from 'node:fs'
import http from 'node:http'

const body = readFileSync(process.env.BODY_FILE!)
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length })
  res.end(body)
})
server.keepAliveTimeout = 72_000
server.listen(Number(process.env.PORT), '127.0.0.1')
process.on('SIGTERM', () => server.close(() => process.exit(0)))
