import { EventEmitter, once } from 'node:events'
import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build } from './helper.js'

/**
 * Slow clients on a real port: half-sent headers, a body that stops, a body sent a byte at a
 * time. Each is cut after its timeout while ordinary requests keep being answered. The database
 * plays no part: these run once, on SQLite, whatever ROJA_TEST_DIALECT says.
 */
const SQLITE = { url: 'sqlite::memory:' }
const HEADERS_MS = 1000
const IDLE_MS = 1500
const REQUEST_MS = 2500
const PER_KIND = 100

async function listen (app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as AddressInfo).port
}

interface Slow { kind: string, openedAt: number, closedAt?: number, socket: Socket }

function open (port: number, kind: string, localAddress: string, start: (socket: Socket) => void): Promise<Slow> {
  return new Promise((resolve, reject) => {
    const slow: Slow = { kind, openedAt: 0, socket: connect({ port, host: '127.0.0.1', localAddress }) }
    slow.socket.on('error', () => {}) // a reset is one way of being cut
    slow.socket.on('close', () => { slow.closedAt = Date.now() })
    slow.socket.resume() // read what the server sends (a 408, then its end), else the end is never seen
    slow.socket.once('connect', () => { slow.openedAt = Date.now(); start(slow.socket); resolve(slow) })
    slow.socket.once('error', reject)
  })
}

/**
 * The server's side of each connection it accepts, by the client's address and port. Listened for after the
 * app's own handlers (the per-address cap among them), so each socket is seen as they left it.
 */
function accepted (app: FastifyInstance): (client: Slow) => Promise<Socket> {
  const seen = new Map<string, Socket>()
  const arrivals = new EventEmitter()
  app.server.on('connection', (socket: Socket) => {
    seen.set(`${socket.remoteAddress}:${socket.remotePort}`, socket)
    arrivals.emit('connection')
  })
  return async (client) => {
    const key = `${client.socket.localAddress}:${client.socket.localPort}`
    while (!seen.has(key)) await once(arrivals, 'connection')
    return seen.get(key)!
  }
}

/** Waits for the socket to close (a server that never closes it fails at tap's timeout). */
async function closed (slow: Slow): Promise<void> {
  if (slow.closedAt === undefined) await once(slow.socket, 'close')
}

const HEAD = 'POST /v1/profiles HTTP/1.1\r\nHost: roja.test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n'

const kinds: Record<string, { limit: number, start: (socket: Socket) => void }> = {
  // never finishes its headers: HEADERS_TIMEOUT_MS
  headers: { limit: HEADERS_MS, start: s => { s.write('GET /health HTTP/1.1\r\nHost: roja.test\r\nX-Slow: ') } },
  // promises 100 bytes, sends 4, then nothing: IDLE_TIMEOUT_MS
  body: { limit: IDLE_MS, start: s => { s.write(`${HEAD}{"fi`) } },
  // a byte every 300 ms never leaves the socket idle: REQUEST_TIMEOUT_MS
  dribble: {
    limit: REQUEST_MS,
    start: s => {
      s.write(HEAD)
      const timer = setInterval(() => { if (!s.destroyed) s.write(' ') }, 300)
      s.once('close', () => clearInterval(timer))
    }
  }
}

t.test(`${PER_KIND * 3} slow connections are each cut after their timeout; normal requests keep flowing`, async (t) => {
  const app = await build(t, {
    database: SQLITE,
    env: { HEADERS_TIMEOUT_MS: String(HEADERS_MS), IDLE_TIMEOUT_MS: String(IDLE_MS), REQUEST_TIMEOUT_MS: String(REQUEST_MS), MAX_CONNECTIONS_PER_IP: '1000' }
  })
  const port = await listen(app)
  // all opened at once, so the longest-held kinds are still held when the normal requests begin
  const slows: Slow[] = await Promise.all(Object.entries(kinds).flatMap(([kind, { start }]) =>
    Array.from({ length: PER_KIND }, () => open(port, kind, '127.0.0.2', start))))
  t.teardown(() => { for (const s of slows) s.socket.destroy() })

  // Ordinary requests from another address until every slow one is cut (a server that never cuts
  // one fails at tap's timeout). No answer's time is asserted: on a busy machine it says nothing of
  // the server. What is: answers came while slow connections were still held (on a busy machine
  // the shortest-lived kind may be cut before the first answer).
  const statuses: number[] = []
  let whileHeld = 0
  const anyHeld = () => slows.some(s => s.closedAt === undefined)
  while (slows.some(s => s.closedAt === undefined)) {
    const held = anyHeld()
    const res = await fetch(`http://127.0.0.1:${port}/health`)
    statuses.push(res.status)
    await res.arrayBuffer()
    if (held && anyHeld()) whileHeld++
    await sleep(100)
  }
  t.same(statuses.filter(s => s !== 200), [], `every normal request got 200 (${statuses.length} sent)`)
  t.ok(whileHeld >= 1, `normal requests were answered while slow connections were held (${whileHeld})`)

  for (const [kind, { limit }] of Object.entries(kinds)) {
    const mine = slows.filter(s => s.kind === kind)
    const open = mine.filter(s => s.closedAt === undefined)
    t.equal(open.length, 0, `${kind}: every connection was cut`)
    const lifetimes = mine.filter(s => s.closedAt !== undefined).map(s => s.closedAt! - s.openedAt)
    // a lower bound only: a busy machine makes a cut later, never earlier
    t.ok(Math.min(...lifetimes) >= limit * 0.9, `${kind}: none cut before its ${limit} ms timeout (shortest ${Math.min(...lifetimes)} ms)`)
  }
})

t.test('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', async (t) => {
  const app = await build(t, { database: SQLITE, env: { KEEP_ALIVE_TIMEOUT_MS: '500' } })
  const port = await listen(app)
  const slow = await open(port, 'keep-alive', '127.0.0.1', s => { s.write('GET /health HTTP/1.1\r\nHost: roja.test\r\n\r\n') })
  let answer = ''
  slow.socket.on('data', (chunk) => { answer += String(chunk) })
  await closed(slow)
  t.match(answer, /^HTTP\/1\.1 200/, 'answered')
  t.ok(slow.closedAt! - slow.openedAt >= 450, `then closed, not before the keep-alive timeout (${slow.closedAt! - slow.openedAt} ms)`)
})

t.test('MAX_CONNECTIONS_PER_IP: one address cannot hold more sockets; others and trusted proxies are not affected', async (t) => {
  const app = await build(t, { database: SQLITE, env: { MAX_CONNECTIONS_PER_IP: '5', TRUST_PROXY: '127.0.0.3' } })
  const port = await listen(app)
  const serverSide = accepted(app)
  const idle = () => undefined
  const held = await Promise.all(Array.from({ length: 5 }, () => open(port, 'held', '127.0.0.2', idle)))
  t.teardown(() => { for (const s of held) s.socket.destroy() })
  const heldOnServer = await Promise.all(held.map(serverSide))
  t.ok(heldOnServer.every(s => !s.destroyed) && held.every(s => s.closedAt === undefined), 'five connections are kept')
  const sixth = await open(port, 'sixth', '127.0.0.2', idle)
  const sixthOnServer = await serverSide(sixth)
  await closed(sixth)
  t.ok(sixthOnServer.destroyed && sixth.closedAt !== undefined, 'the sixth from the same address is closed at once')

  const other = await fetch(`http://127.0.0.1:${port}/health`)
  t.equal(other.status, 200, 'another address is served')

  held[0].socket.destroy()
  await once(heldOnServer[0], 'close') // after the cap's own close handler: the address is down to four
  const again = await open(port, 'again', '127.0.0.2', s => { s.write('GET /health HTTP/1.1\r\nHost: roja.test\r\nConnection: close\r\n\r\n') })
  let answer = ''
  again.socket.on('data', (chunk) => { answer += String(chunk) })
  await closed(again)
  t.match(answer, /^HTTP\/1\.1 200/, 'once one closes, the address may connect again')

  const proxy = await Promise.all(Array.from({ length: 10 }, () => open(port, 'proxy', '127.0.0.3', idle)))
  t.teardown(() => { for (const s of proxy) s.socket.destroy() })
  const proxyOnServer = await Promise.all(proxy.map(serverSide))
  t.ok(proxyOnServer.every(s => !s.destroyed) && proxy.every(s => s.closedAt === undefined), 'a trusted proxy carries everyone\'s connections: no cap')
})
