/**
 * Load and fault soak (`npm run soak`; not part of `npm test`). Starts the real server as a child
 * process on loopback with production settings, on SQLite and on PostgreSQL, and runs:
 *   saturation  SOAK_SECONDS (default 60) of mixed reads and writes with autocannon: zero errors,
 *               every write answered 201 readable afterwards;
 *   sigterm     SIGTERM under write load: answers are 2xx or 503, refusals are clean, the process
 *               exits within SHUTDOWN_GRACE_MS, every acknowledged write survives;
 *   kill -9     SIGKILL under write load, restart: acknowledged writes present, no post without its
 *               tags, every alert with its outbox e-mail, e-mails delivered after the restart;
 *   db outage   (PostgreSQL) the database stops and starts: /health 503 meanwhile, requests get a
 *               clean 503 problem, the server recovers without a restart;
 *   overload    far more connections than it can serve: 503 + Retry-After, memory bounded;
 *   hostile     a flood of costly requests from three clients (deep bodies to unknown routes and
 *               methods, to a creator route without the right and to sign-up; 2,000-term sorts;
 *               15 KB paths) while a normal client reads and writes: the server's CPU a request
 *               stays under HOSTILE_CPU_MS and the normal client sees no error or 5xx;
 *   bodies      (named only) the CPU a request of huge invalid bodies against a valid 1 MB post.
 * PostgreSQL runs as a private throw-away cluster (scripts/fleet/postgres.ts). Prints a table and
 * writes soak-results.json.
 * SOAK_SECONDS=5 is the short mode for CI; SOAK_DIALECTS=sqlite|postgres and SOAK_PHASES=saturation,sigterm,kill9,outage,overload,hostile narrow the run.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
// @ts-expect-error autocannon ships no type declarations; the few fields used are typed below
import autocannonJs from 'autocannon'
import Database from 'better-sqlite3'
import pg from 'pg'
import { cpuMs, freePort, request, rssBytes, signUpVerified } from './proc.js'
import { Instance } from './fleet/fleet.js'
import { privatePostgres } from './fleet/postgres.js'
import { VERIFICATION_SUBJECT } from '../src/domain/email-verification.js'

interface CannonRequest {
  method: string
  path: string
  headers?: Record<string, string>
  body?: string
  setupRequest?: (req: CannonRequest) => CannonRequest
  onResponse?: (status: number, body: string, context: unknown, headers?: Record<string, string>) => void
}
interface CannonResult {
  errors: number
  timeouts: number
  non2xx: number
  requests: { total: number; average: number }
  latency: { p99: number }
}
const autocannon = autocannonJs as (opts: {
  url: string
  connections: number
  duration: number
  timeout?: number
  headers?: Record<string, string>
  requests: CannonRequest[]
}) => Promise<CannonResult>

const ROOT = resolve(import.meta.dirname, '..')
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60)
const DIALECTS = (process.env.SOAK_DIALECTS ?? 'sqlite,postgres')
  .split(',')
  .map(s => s.trim())
  .filter(Boolean)
const PHASES = new Set((process.env.SOAK_PHASES ?? 'saturation,sigterm,kill9,outage,overload,hostile').split(',').map(s => s.trim()))
const GRACE_MS = 5000
const SECRET = 'soak-secret-that-is-at-least-32-bytes-long!!'
const PASSWORD = 'correct horse battery staple'
const HTTPS = { 'x-forwarded-proto': 'https' }

interface Row {
  dialect: string
  fault: string
  requests: number
  acknowledged: number
  lost: number
  errors: number
  ok: boolean
  notes: string
}
const results: Row[] = []

// ---------------------------------------------------------------- HTTP without keep-alive
type Answer = Awaited<ReturnType<typeof request>>
const call = (port: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 15000): Promise<Answer> =>
  request({ port, method, path, timeout: timeoutMs, headers: { ...HTTPS, ...headers } }, body)

// ---------------------------------------------------------------- the server under test
/** Roja from the TypeScript sources, a child process on a port of its own (scripts/fleet/fleet.ts). */
const newServer = async (env: Record<string, string>) => new Instance('roja', await freePort(), ['--import', 'tsx', 'src/server.ts'], env)
const STOP_MS = GRACE_MS + 2000
// The servers run detached: an interrupted soak stops them through fleet.ts's exit handler.
process.once('SIGINT', () => process.exit(130))

// ---------------------------------------------------------------- databases
interface Store {
  url: string
  query: (sql: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>
  close: () => Promise<void>
  /** PostgreSQL only: stop and start the database server */
  stopDb?: () => void
  startDb?: () => void
}

function sqliteStore (dir: string): Store {
  const file = join(dir, 'roja.sqlite')
  let db: Database.Database | undefined
  const open = () => (db ??= new Database(file))
  return {
    url: `sqlite:${file}`,
    query: async (sql, params = []) => {
      const statement = open().prepare(sql.replace(/\$\d+/g, '?'))
      return statement.reader ? (statement.all(...params) as Array<Record<string, unknown>>) : (statement.run(...params), [])
    },
    close: async () => {
      db?.close()
      db = undefined
    }
  }
}

/** A private PostgreSQL cluster (the fleet's), so stopping it disturbs nothing else on the machine. */
async function postgresStore (): Promise<Store> {
  const cluster = await privatePostgres()
  const pool = new pg.Pool({ connectionString: cluster.url, max: 2 })
  pool.on('error', () => {})
  return {
    url: cluster.url,
    query: async (sql, params = []) => (await pool.query(sql, params)).rows,
    close: async () => {
      await pool.end().catch(() => {})
      cluster.destroy()
    },
    stopDb: cluster.stop,
    startDb: cluster.start
  }
}

// ---------------------------------------------------------------- the API's users
interface Session {
  creator: Record<string, string>
  user: Record<string, string>
  baitPostId: string
}

async function signUp (port: number, store: Store, creator: boolean): Promise<Record<string, string>> {
  const username = `soak-${randomUUID().slice(0, 8)}`
  // Alerts are mailed only to verified addresses: the user confirms the link sign-up queued.
  const mail = async (email: string) =>
    (await store.query('select body from outbox_message where to_address = $1 and subject = $2', [email, VERIFICATION_SUBJECT]))[0]?.body as string
  const { auth } = await signUpVerified((method, path, body) => call(port, method, path, body), mail, username, PASSWORD)
  // becoming a creator is an operator action: done in the database, as the CLI would
  if (creator) await store.query('update "user" set is_creator = $1 where username = $2', [store.url.startsWith('sqlite') ? 1 : true, username])
  return auth
}

async function session (port: number, store: Store): Promise<Session> {
  const creator = await signUp(port, store, true)
  const user = await signUp(port, store, false)
  const post = await call(port, 'POST', '/v1/posts', { title: `bait ${randomUUID()}`, type: 'ARTICLE' }, creator)
  if (post.status !== 201) throw new Error(`bait post failed: ${post.status} ${post.body}`)
  return { creator, user, baitPostId: JSON.parse(post.body).id }
}

const TAGS = (n: number) => ['soak', `t${n % 7}`, `u${n % 3}`]

// ---------------------------------------------------------------- checks on the stored data
interface Acks {
  posts: Map<string, number>
  comments: Set<string>
}

async function missing (store: Store, table: string, ids: string[]): Promise<number> {
  let found = 0
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500)
    const marks = chunk.map((_, j) => `$${j + 1}`).join(',')
    const rows = await store.query(`select count(*) as n from "${table}" where id in (${marks})`, chunk)
    found += Number(rows[0].n)
  }
  return ids.length - found
}

/** Posts whose tag rows are not all there: a half-written post. */
async function halfWritten (store: Store): Promise<number> {
  const rows = await store.query(`select p.id, count(t.tag) as n from post p left join post_tag t on t.post_id = p.id
    where p.title like 'soak %' group by p.id having count(t.tag) <> 3`)
  return rows.length
}

async function alertsWithoutEmail (store: Store): Promise<number> {
  const rows = await store.query('select count(*) as n from alert a where not exists (select 1 from outbox_message o where o.alert_id = a.id)')
  return Number(rows[0].n)
}

// ---------------------------------------------------------------- phases
async function saturation (dialect: string, server: Instance, store: Store, s: Session) {
  const acks: Acks = { posts: new Map(), comments: new Set() }
  let n = 0
  const statuses: Record<string, number> = {}
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}`,
    connections: 16,
    duration: SECONDS,
    headers: HTTPS,
    requests: [
      {
        method: 'POST',
        path: '/v1/posts',
        headers: { ...s.creator, 'content-type': 'application/json' },
        setupRequest: req => {
          const i = n++
          return { ...req, body: JSON.stringify({ title: `soak ${i} ${randomUUID()}`, type: 'ARTICLE', tags: TAGS(i) }) }
        },
        onResponse: (status, body) => {
          statuses[status] = (statuses[status] ?? 0) + 1
          if (status === 201) acks.posts.set(JSON.parse(body).id, 3)
        }
      },
      {
        method: 'GET',
        path: '/v1/posts?limit=20&tags=soak',
        onResponse: status => {
          statuses[status] = (statuses[status] ?? 0) + 1
        }
      },
      {
        method: 'POST',
        path: `/v1/posts/${s.baitPostId}/comments`,
        headers: { ...s.user, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'soak comment' }),
        onResponse: (status, body) => {
          statuses[status] = (statuses[status] ?? 0) + 1
          if (status === 201) acks.comments.add(JSON.parse(body).id)
        }
      },
      {
        method: 'GET',
        path: `/v1/posts/${s.baitPostId}`,
        onResponse: status => {
          statuses[status] = (statuses[status] ?? 0) + 1
        }
      }
    ]
  })
  const lostPosts = await missing(store, 'post', [...acks.posts.keys()])
  const lostComments = await missing(store, 'comment', [...acks.comments])
  // every acknowledged post answers over HTTP too (a sample, the database check covers all)
  let unreadable = 0
  for (const id of [...acks.posts.keys()].slice(0, 50)) {
    if ((await call(server.port, 'GET', `/v1/posts/${id}`)).status !== 200) unreadable++
  }
  const errors = result.errors + result.timeouts + result.non2xx
  results.push({
    dialect,
    fault: `saturation ${SECONDS}s`,
    requests: result.requests.total,
    acknowledged: acks.posts.size + acks.comments.size,
    lost: lostPosts + lostComments + unreadable,
    errors,
    ok: errors === 0 && lostPosts + lostComments + unreadable === 0 && acks.posts.size > 0,
    notes: `${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms, statuses ${JSON.stringify(statuses)}, half-written ${await halfWritten(store)}`
  })
}

/** Writers that keep going until told to stop; outcome of every request recorded. */
function writers (port: number, s: Session, count: number) {
  const acks: Acks = { posts: new Map(), comments: new Set() }
  const outcomes: Record<string, number> = {}
  // the text of every write that got no answer, to tell "never processed" from "processed, answer dropped"
  const unanswered: string[] = []
  let running = true
  let i = 0
  const note = (k: string) => {
    outcomes[k] = (outcomes[k] ?? 0) + 1
  }
  const loops = Array.from({ length: count }, async (_, w) => {
    while (running) {
      const n = i++
      const text = `soak ${n} ${randomUUID()}`
      try {
        if (w % 3 === 2) {
          const res = await call(port, 'POST', `/v1/posts/${s.baitPostId}/comments`, { text }, s.user)
          note(String(res.status))
          if (res.status === 201) acks.comments.add(JSON.parse(res.body).id)
        } else {
          const res = await call(port, 'POST', '/v1/posts', { title: text, type: 'ARTICLE', tags: TAGS(n) }, s.creator)
          note(String(res.status))
          if (res.status === 201) acks.posts.set(JSON.parse(res.body).id, 3)
          if (res.status === 503 && !res.headers['retry-after']) note('503 without Retry-After')
        }
      } catch (err) {
        const code = (err as { code?: string }).code ?? 'error'
        note(code)
        if (code !== 'ECONNREFUSED') unanswered.push(text)
        await sleep(20) // the server is gone: do not spin
      }
    }
  })
  return {
    acks,
    outcomes,
    unanswered,
    stop: async () => {
      running = false
      await Promise.all(loops)
    }
  }
}

/** How many writes that got no answer were nevertheless stored (processed, then the answer was lost). */
async function processedUnanswered (store: Store, texts: string[]): Promise<number> {
  let n = 0
  for (const text of texts) {
    const rows = await store.query('select (select count(*) from post where title = $1) + (select count(*) from comment where text = $2) as n', [
      text,
      text
    ])
    n += Number(rows[0].n)
  }
  return n
}

async function sigterm (dialect: string, server: Instance, store: Store, s: Session) {
  const load = writers(server.port, s, 12)
  await sleep(1500)
  const t0 = Date.now()
  server.child!.kill('SIGTERM')
  const exit = await Promise.race([server.exit!, sleep(GRACE_MS + 3000, undefined, { ref: false }).then(() => undefined)])
  const exitMs = Date.now() - t0
  await sleep(300)
  await load.stop()
  if (!exit) server.child!.kill('SIGKILL')
  await server.start()
  const lost = (await missing(store, 'post', [...load.acks.posts.keys()])) + (await missing(store, 'comment', [...load.acks.comments]))
  // a reset before the request was read is a refusal (the kernel's backlog at close); a reset of a
  // request the server had processed would be an accepted request that did not complete
  const dropped = await processedUnanswered(store, load.unanswered)
  const bad = Object.entries(load.outcomes).filter(([k]) => !/^(201|503|ECONNREFUSED|ECONNRESET)$/.test(k))
  const errors = bad.reduce((a, [, v]) => a + v, 0) + dropped
  results.push({
    dialect,
    fault: 'SIGTERM under load',
    requests: Object.values(load.outcomes).reduce((a, b) => a + b, 0),
    acknowledged: load.acks.posts.size + load.acks.comments.size,
    lost,
    errors,
    ok: Boolean(exit) && exit!.code === 0 && exitMs <= GRACE_MS + 1000 && lost === 0 && errors === 0,
    notes:
      `exit ${exit ? `code ${exit.code}` : 'none'} after ${exitMs} ms (grace ${GRACE_MS}); outcomes ${JSON.stringify(load.outcomes)}; ` +
      `refused before being read: ${load.unanswered.length - dropped}, processed but unanswered: ${dropped}`
  })
}

async function kill9 (dialect: string, server: Instance, store: Store, s: Session) {
  const load = writers(server.port, s, 12)
  await sleep(2000)
  server.child!.kill('SIGKILL')
  await server.exit
  await sleep(200)
  await load.stop()
  await server.start()
  const lost = (await missing(store, 'post', [...load.acks.posts.keys()])) + (await missing(store, 'comment', [...load.acks.comments]))
  const half = await halfWritten(store)
  const noEmail = await alertsWithoutEmail(store)
  // the restarted worker delivers what was due; a message claimed at the kill waits out its lease
  let pending = -1
  let leased = 0
  const sentCount = async () => Number((await store.query('select count(*) as n from outbox_message where sent_at is not null'))[0].n)
  const sentAtRestart = await sentCount()
  for (let i = 0; i < 100; i++) {
    const rows = await store.query('select locked_until_at, sent_at from outbox_message where sent_at is null')
    const now = Date.now()
    leased = rows.filter(r => r.locked_until_at !== null && new Date(String(r.locked_until_at)).getTime() > now).length
    pending = rows.length - leased
    if (pending === 0) break
    await sleep(200)
  }
  const sent = await sentCount()
  // delivered, or (a backlog left by the saturation phase) being delivered by the restarted worker
  const delivering = pending === 0 || sent > sentAtRestart
  const bad = Object.entries(load.outcomes).filter(([k]) => !/^(201|503|ECONNREFUSED|ECONNRESET|socket hang up)$/.test(k))
  results.push({
    dialect,
    fault: 'kill -9 under writes, restart',
    requests: Object.values(load.outcomes).reduce((a, b) => a + b, 0),
    acknowledged: load.acks.posts.size + load.acks.comments.size,
    lost: lost + half + noEmail,
    errors: bad.reduce((a, [, v]) => a + v, 0),
    ok: lost === 0 && half === 0 && noEmail === 0 && delivering,
    notes:
      `half-written posts ${half}, alerts without e-mail ${noEmail}, e-mails sent ${sent} (${sent - sentAtRestart} since the restart), still queued ${pending}, ` +
      `claimed before the kill (redelivered when their lease ends) ${leased}; outcomes ${JSON.stringify(load.outcomes)}; ` +
      `unanswered at the kill but committed: ${await processedUnanswered(store, load.unanswered)} (a crash cannot answer; the client retries with Idempotency-Key)`
  })
}

async function dbOutage (dialect: string, server: Instance, store: Store, s: Session) {
  const answers: Record<string, number> = {}
  const note = (k: string) => {
    answers[k] = (answers[k] ?? 0) + 1
  }
  let healthDown = false
  let clean = true
  let recoveredMs = -1
  try {
    store.stopDb!()
    for (let i = 0; i < 50 && !healthDown; i++) {
      healthDown = (await call(server.port, 'GET', '/health')).status === 503
      if (!healthDown) await sleep(200)
    }
    for (const [method, path, body, headers] of [
      ['GET', '/v1/posts', undefined, {}],
      ['POST', '/v1/posts', { title: 'soak during outage', type: 'ARTICLE', tags: TAGS(0) }, s.creator],
      ['GET', `/v1/posts/${s.baitPostId}`, undefined, {}],
      ['GET', '/v1/profiles/me', undefined, s.user]
    ] as const) {
      for (let k = 0; k < 5; k++) {
        const res = await call(server.port, method, path, body, headers as Record<string, string>)
        note(String(res.status))
        const problem = /application\/problem\+json/.test(String(res.headers['content-type']))
        if (res.status !== 503 || !problem || !res.headers['retry-after'] || JSON.parse(res.body).code !== 'ServiceUnavailable') clean = false
      }
    }
  } finally {
    store.startDb!()
  }
  const t0 = Date.now()
  for (let i = 0; i < 150; i++) {
    const health = await call(server.port, 'GET', '/health').catch(() => undefined)
    const write =
      health?.status === 200
        ? await call(server.port, 'POST', '/v1/posts', { title: `soak after outage ${randomUUID()}`, type: 'ARTICLE', tags: TAGS(1) }, s.creator)
        : undefined
    if (write?.status === 201) {
      recoveredMs = Date.now() - t0
      break
    }
    await sleep(200)
  }
  const errors = Object.entries(answers)
    .filter(([k]) => k !== '503')
    .reduce((a, [, v]) => a + v, 0)
  results.push({
    dialect,
    fault: 'database stopped and started',
    requests: Object.values(answers).reduce((a, b) => a + b, 0),
    acknowledged: 0,
    lost: 0,
    errors,
    ok: healthDown && clean && recoveredMs >= 0,
    notes: `/health 503 during outage: ${healthDown}; answers ${JSON.stringify(answers)} (clean 503 problem + Retry-After: ${clean}); recovered without restart after ${recoveredMs} ms`
  })
}

async function overload (dialect: string, base: Record<string, string>, s: Session) {
  // A low ceiling, so that this machine's saturation crosses it. The session was made on a server
  // with the usual one: this one takes no request before the load, so a machine already busy (CI
  // runs the suite beside it) cannot shed the setup.
  const server = await newServer({ ...base, MAX_EVENT_LOOP_DELAY_MS: '1' })
  await server.start()
  try {
    const before = rssBytes(server.pid!)
    let peak = before
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(server.pid!))
    }, 100)
    const statuses: Record<string, number> = {}
    let shedWithoutRetryAfter = 0
    const result = await autocannon({
      url: `http://127.0.0.1:${server.port}`,
      connections: 400,
      duration: Math.max(10, Math.min(20, SECONDS)),
      timeout: 20,
      headers: HTTPS,
      requests: [
        {
          method: 'GET',
          path: '/v1/posts?limit=100',
          onResponse: (status, _b, _c, headers) => {
            statuses[status] = (statuses[status] ?? 0) + 1
            if (status === 503 && !headers?.['retry-after']) shedWithoutRetryAfter++
          }
        },
        {
          method: 'POST',
          path: '/v1/posts',
          headers: { ...s.creator, 'content-type': 'application/json' },
          setupRequest: req => ({ ...req, body: JSON.stringify({ title: `soak overload ${randomUUID()}`, type: 'ARTICLE', tags: TAGS(2) }) }),
          onResponse: status => {
            statuses[status] = (statuses[status] ?? 0) + 1
          }
        }
      ]
    })
    clearInterval(sampler)
    const shed = statuses['503'] ?? 0
    const other = Object.entries(statuses)
      .filter(([k]) => !/^(200|201|503)$/.test(k))
      .reduce((a, [, v]) => a + v, 0)
    const ceiling = 1024 ** 3
    results.push({
      dialect,
      fault: 'overload (400 conns, 1 ms loop ceiling)',
      requests: result.requests.total,
      acknowledged: statuses['201'] ?? 0,
      lost: 0,
      errors: other + result.errors + shedWithoutRetryAfter,
      ok: shed > 0 && other === 0 && shedWithoutRetryAfter === 0 && peak < ceiling && (await call(server.port, 'GET', '/health')).status === 200,
      notes: `shed ${shed} with 503 + Retry-After; RSS ${mb(before)} → peak ${mb(peak)} (ceiling ${mb(ceiling)}); connection errors ${result.errors}, timeouts ${result.timeouts}; statuses ${JSON.stringify(statuses)}`
    })
  } finally {
    await server.stop(STOP_MS)
  }
}

const mb = (n: number) => `${Math.round(n / 1024 / 1024)} MiB`

/** Huge invalid bodies cost no more CPU a request than a valid 1 MB post; a stranger's stop at the public body limit. */
async function bodies (dialect: string, server: Instance, s: Session) {
  const post = { type: 'ARTICLE', title: 'Bodies', body: 'x'.repeat(100_000) }
  const unknown = (base: object) => JSON.stringify({ ...base, ...Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`k${i}`, 1])) })
  const kinds: Array<[string, string, () => string, Record<string, string>, number]> = [
    ['valid post padded to 1 MB', '/v1/posts', () => JSON.stringify({ ...post, title: randomUUID() }).padEnd(1_000_000, ' '), s.creator, 201],
    [
      'sign-up, 90,000 unknown properties (1 MB)',
      '/v1/profiles',
      () => unknown({ username: 'x', email: 'x@example.com', password: PASSWORD, first_name: 'X' }),
      {},
      413
    ],
    ['post, 100,000 tags', '/v1/posts', () => JSON.stringify({ ...post, tags: Array.from({ length: 100_000 }, () => 'x!') }), s.creator, 413],
    ['post, 90,000 unknown properties (1 MB)', '/v1/posts', () => unknown({ type: 'ARTICLE', title: 'Bodies' }), s.creator, 413]
  ]
  const cpu: number[] = []
  const notes: string[] = []
  let errors = 0
  for (const [name, path, body, headers, status] of kinds) {
    const sent = Array.from({ length: 20 }, body)
    const before = cpuMs(server.pid!)!
    for (const b of sent) {
      const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
        method: 'POST',
        headers: { ...HTTPS, ...headers, 'content-type': 'application/json' },
        body: b
      })
      const size = (await res.arrayBuffer()).byteLength
      if (res.status !== status || (status >= 400 && size > 16_384)) {
        errors++
        if (errors === 1) notes.push(`${name}: ${res.status}, ${size} bytes`)
      }
    }
    cpu.push((cpuMs(server.pid!)! - before) / sent.length)
    notes.push(`${name}: ${cpu.at(-1)!.toFixed(1)} ms CPU a request (${status})`)
  }
  // within 20 % of the valid post: 20 requests' CPU is read in 10 ms ticks
  const ok = errors === 0 && cpu.slice(1).every(c => c <= 1.2 * cpu[0])
  results.push({ dialect, fault: 'huge invalid bodies', requests: 20 * kinds.length, acknowledged: 20, lost: 0, errors, ok, notes: notes.join('; ') })
}

/**
 * The server's CPU a request (the flood's and the normal client's) under the hostile flood: 1.1 ms
 * on SQLite and 1.4 on PostgreSQL on a quiet machine; before the costs were bounded, one deep body
 * took 1–2 s. CPU, not the normal client's latency: in CI the suite shares the two cores, and the
 * p99 (60–70 ms quiet) passed 1 s there with nothing wrong in the server. The p99 is still printed.
 */
const HOSTILE_CPU_MS = 10

/** Costly requests from three clients (by X-Forwarded-For) beside a normal client's reads and writes. */
async function hostile (dialect: string, server: Instance, s: Session) {
  const url = `http://127.0.0.1:${server.port}`
  const json = { 'content-type': 'application/json' }
  const deep = (bytes: number) => '['.repeat(bytes / 2) + ']'.repeat(bytes / 2)
  // the cheap-to-send first: after a closed connection autocannon starts its list again
  const flood: CannonRequest[] = [
    { method: 'GET', path: `/v1/posts?sort=${Array(2000).fill('title').join(',')}` },
    { method: 'GET', path: `/v1/${'a'.repeat(15_000)}` },
    { method: 'POST', path: '/v1/profiles', headers: json, body: deep(64 * 1024 - 2) },
    { method: 'POST', path: '/v1/posts', headers: { ...s.user, ...json }, body: deep(1024 * 1024) },
    { method: 'PUT', path: '/health', headers: json, body: deep(1024 * 1024) },
    { method: 'POST', path: '/v1/nope', headers: json, body: deep(1024 * 1024) }
  ]
  let n = 0
  const floodStatuses: Record<string, number> = {}
  const hostileRun = autocannon({
    url,
    connections: 6,
    duration: SECONDS,
    timeout: 30,
    requests: flood.map(r => ({
      ...r,
      setupRequest: (req: CannonRequest) => ({ ...req, headers: { ...HTTPS, ...req.headers, 'x-forwarded-for': `203.0.113.${(n++ % 3) + 1}` } }),
      onResponse: (status: number) => {
        floodStatuses[status] = (floodStatuses[status] ?? 0) + 1
      }
    }))
  })
  const statuses: Record<string, number> = {}
  const count = (status: number) => {
    statuses[status] = (statuses[status] ?? 0) + 1
  }
  let i = 0
  const normalRun = autocannon({
    url,
    connections: 4,
    duration: SECONDS,
    timeout: 30,
    headers: { ...HTTPS, 'x-forwarded-for': '198.51.100.1' },
    requests: [
      { method: 'GET', path: '/v1/posts?limit=20', onResponse: count },
      {
        method: 'POST',
        path: '/v1/posts',
        headers: { ...s.creator, ...json },
        setupRequest: req => ({ ...req, body: JSON.stringify({ title: `hostile ${i++} ${randomUUID()}`, type: 'ARTICLE' }) }),
        onResponse: count
      },
      { method: 'GET', path: `/v1/posts/${s.baitPostId}`, onResponse: count }
    ]
  })
  const before = cpuMs(server.pid!)!
  const [normal, flooded] = await Promise.all([normalRun, hostileRun])
  const cpuPerRequest = (cpuMs(server.pid!)! - before) / Math.max(1, normal.requests.total + flooded.requests.total)
  const failed = Object.entries(statuses)
    .filter(([k]) => Number(k) >= 500 || Number(k) < 200 || Number(k) >= 300)
    .reduce((a, [, v]) => a + v, 0)
  const fiveHundreds = Object.entries(floodStatuses)
    .filter(([k]) => Number(k) >= 500)
    .reduce((a, [, v]) => a + v, 0)
  results.push({
    dialect,
    fault: `hostile flood (${SECONDS}s)`,
    requests: normal.requests.total + flooded.requests.total,
    acknowledged: statuses['201'] ?? 0,
    lost: 0,
    errors: failed + normal.errors + normal.timeouts + fiveHundreds,
    ok:
      failed === 0 &&
      normal.errors + normal.timeouts === 0 &&
      fiveHundreds === 0 &&
      cpuPerRequest <= HOSTILE_CPU_MS &&
      normal.requests.total > 0,
    notes:
      `normal client: ${normal.requests.total} requests, p99 ${normal.latency.p99} ms, statuses ${JSON.stringify(statuses)}; ` +
      `flood: ${flooded.requests.total} answered, statuses ${JSON.stringify(floodStatuses)}, connection errors ${flooded.errors}; ` +
      `server CPU ${cpuPerRequest.toFixed(1)} ms a request (bound ${HOSTILE_CPU_MS})`
  })
}

// ---------------------------------------------------------------- main
async function runDialect (dialect: string) {
  const dir = mkdtempSync(join(tmpdir(), `roja-soak-${dialect}-`))
  let store: Store | undefined
  let server: Instance | undefined
  try {
    store = dialect === 'postgres' ? await postgresStore() : sqliteStore(dir)
    const base = {
      ENVIRONMENT: 'production',
      JWT_SECRET: SECRET,
      TRUST_PROXY: '127.0.0.1',
      HOST: '127.0.0.1',
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: store.url,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_MAX: '100000000',
      AUTH_RATE_LIMIT_MAX: '100000',
      SHUTDOWN_GRACE_MS: String(GRACE_MS)
    }
    server = await newServer(base)
    await server.start()
    const s = await session(server.port, store)
    if (PHASES.has('saturation')) await saturation(dialect, server, store, s)
    if (PHASES.has('hostile')) await hostile(dialect, server, s)
    if (PHASES.has('sigterm')) await sigterm(dialect, server, store, s)
    if (PHASES.has('kill9')) await kill9(dialect, server, store, s)
    if (PHASES.has('outage') && store.stopDb) await dbOutage(dialect, server, store, s)
    if (PHASES.has('bodies')) await bodies(dialect, server, s)
    await server.stop(STOP_MS)
    if (PHASES.has('overload')) await overload(dialect, base, s)
  } catch (err) {
    results.push({
      dialect,
      fault: 'harness',
      requests: 0,
      acknowledged: 0,
      lost: 0,
      errors: 1,
      ok: false,
      notes: String((err as Error).stack ?? err).slice(0, 800) + (server ? `\n${server.log.join('').slice(-6000)}` : '')
    })
  } finally {
    await server?.stop(STOP_MS).catch(() => {})
    await store?.close().catch(() => {})
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true })
  }
}

for (const dialect of DIALECTS) await runDialect(dialect)
console.table(
  results.map(r => ({
    dialect: r.dialect,
    fault: r.fault,
    requests: r.requests,
    acknowledged: r.acknowledged,
    lost: r.lost,
    errors: r.errors,
    ok: r.ok ? 'yes' : 'NO'
  }))
)
for (const r of results) console.log(`${r.dialect} / ${r.fault}: ${r.notes}`)
writeFileSync(join(ROOT, 'soak-results.json'), JSON.stringify({ at: new Date().toISOString(), seconds: SECONDS, results }, null, 2) + '\n')
process.exit(results.every(r => r.ok) ? 0 : 1)
