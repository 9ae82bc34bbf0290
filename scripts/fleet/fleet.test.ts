/**
 * The fleet test (`npm run fleet:test`; not part of `npm test`): three Roja instances from the
 * TypeScript sources behind HAProxy, on a private PostgreSQL cluster and a private Redis (so each
 * may be stopped) and a real SMTP server on loopback.
 * Every request goes through the balancer; the database is read directly to check what it holds.
 * Prometheus (Debian's prometheus package: promtool and the server) scrapes the instances with
 * ops/prometheus/prometheus.yml, and `npm run fleet` itself is started and stopped as a user would.
 * The fleet starts on the previous release (the sources before the newest migration, or the git
 * revision FLEET_UPGRADE_FROM) and is upgraded to this tree under load by the first tests.
 */
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import pg from 'pg'
import t from 'tap'
import { VERIFICATION_SUBJECT } from '../../src/domain/email-verification.js'
import { smtpServer } from '../../test/mail.js'
import { freePort, listening, metricSamples, request, signUpVerified } from '../proc.js'
import { startFleet, workingTree, type Fleet, type Instance, type TargetGroup } from './fleet.js'
import { failingBuild, previousRelease, revisionBuild, rollingUpgrade } from './upgrade.js'

const ROOT = resolve(import.meta.dirname, '../..')
// /metrics wants it, as in production; Prometheus reads it from its credentials file
const METRICS_TOKEN = randomBytes(24).toString('base64url')
const scraper = { authorization: `Bearer ${METRICS_TOKEN}` }
const RATE_LIMIT_MAX = 40
// Wrong passwords allowed per client address and username (AUTH_RATE_LIMIT_MAX). The other
// properties log in once per user, each from a fresh address, so only the guessing property meets it.
const PASSWORD_GUESSES = 5
const PASSWORD = 'correct horse battery staple'

// ---------------------------------------------------------------- HTTP through the balancer
interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
  json: any
  servedBy?: string
}
interface CallOptions {
  body?: unknown
  headers?: Record<string, string>
  /** the client address HAProxy passes on (X-Forwarded-For); a fresh one per request by default,
   *  so that only the rate-limit test meets the rate limit */
  ip?: string
  /** ask HAProxy for this instance */
  instance?: string
  /** the local address to connect from (the address HAProxy sees), 127.0.0.1 by default */
  from?: string
  /** send to this port instead of HAProxy's: an instance directly */
  port?: number
}

const randomIp = () => `198.18.${randomBytes(1)[0]}.${1 + (randomBytes(1)[0] % 254)}`
// A client of its own on loopback: any 127/8 address but 127.0.0.1, the one proxy the instances
// trust, so it is a client HAProxy sees rather than a proxy.
const clientAddress = () => `127.${1 + (randomBytes(1)[0] % 254)}.${randomBytes(1)[0]}.${1 + (randomBytes(1)[0] % 254)}`

/** One request on its own connection (scripts/proc.ts), through HAProxy unless `port` names an instance. */
async function call (fleet: Fleet, method: string, path: string, o: CallOptions = {}): Promise<Answer> {
  const res = await request(
    {
      port: o.port ?? fleet.haproxy.port,
      ...(o.from ? { localAddress: o.from } : {}),
      method,
      path,
      timeout: 20_000,
      headers: { 'x-forwarded-for': o.ip ?? randomIp(), ...(o.instance ? { 'x-fleet-instance': o.instance } : {}), ...o.headers }
    },
    o.body
  )
  let json: unknown
  try {
    json = JSON.parse(res.body)
  } catch {}
  return { ...res, json, servedBy: res.headers['x-served-by'] as string | undefined }
}

const direct = (instance: Instance, path: string, headers: Record<string, string> = {}) =>
  request({ port: instance.port, path, headers }).catch(() => ({ status: 0, body: '' }))

// ---------------------------------------------------------------- load
interface Outcome {
  status: number | string
  servedBy?: string
  startedAt: number
  endedAt: number
  id?: string
  answer?: Answer
}

/** `loops` clients sending `next()`'s request back to back until stopped; every outcome kept. */
function load (send: (n: number) => Promise<Answer>, loops: number) {
  const outcomes: Outcome[] = []
  let running = true
  let n = 0
  const all = Array.from({ length: loops }, async () => {
    while (running) {
      const startedAt = Date.now()
      try {
        const answer = await send(n++)
        outcomes.push({ status: answer.status, servedBy: answer.servedBy, startedAt, endedAt: Date.now(), id: answer.json?.id, answer })
        if (answer.status >= 500) await sleep(50) // a refused client backs off a little, as it should
      } catch (err) {
        outcomes.push({ status: (err as { code?: string }).code ?? String(err), startedAt, endedAt: Date.now() })
        await sleep(20)
      }
    }
  })
  return {
    outcomes,
    stop: async () => {
      running = false
      await Promise.all(all)
    }
  }
}

const tally = (outcomes: Outcome[]) =>
  outcomes.reduce<Record<string, number>>((a, o) => {
    a[o.status] = (a[o.status] ?? 0) + 1
    return a
  }, {})

// ---------------------------------------------------------------- the fleet
/** A Redis of the fleet's own on `port`, fresh (it keeps nothing), answering before this returns. */
async function startRedis (port: number) {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {}) // refused until the server listens
  for (
    let i = 0;
    i < 100 &&
    !(await probe.connect().then(
      () => true,
      () => false
    ));
    i++
  ) { await sleep(50) }
  probe.disconnect()
  return child
}
const REDIS_PORT = await freePort()
const REDIS_URL = `redis://127.0.0.1:${REDIS_PORT}`
let redisServer = await startRedis(REDIS_PORT)
t.teardown(() => {
  redisServer.kill('SIGKILL')
})
for (const bin of ['promtool', 'prometheus']) {
  if (spawnSync(bin, ['--version']).error) throw new Error(`${bin} is not installed (Debian: apt-get install -y --no-install-recommends prometheus)`)
}
// ops/prometheus as an operator installs it: the shipped config and rules, the token file beside
// them, and the fleet's targets file in targets/, where the config looks for it.
const OPS_PROMETHEUS = join(ROOT, 'ops', 'prometheus')
const promDir = mkdtempSync(join(tmpdir(), 'roja-fleet-prometheus-'))
t.teardown(() => rmSync(promDir, { recursive: true, force: true }))
for (const file of ['prometheus.yml', 'alerts.yml']) copyFileSync(join(OPS_PROMETHEUS, file), join(promDir, file))
writeFileSync(join(promDir, 'roja-metrics-token'), `${METRICS_TOKEN}\n`)
// slow enough that one worker's batch outlasts another's poll
const smtp = await smtpServer(t, { delayMs: 25 })
const messageIds = () => smtp.received.map(m => m.messageId)
const OLD = revisionBuild(process.env.FLEET_UPGRADE_FROM || previousRelease())
t.teardown(() => OLD.dispose())
const NEW = workingTree('tsx')
const started = Date.now()
const fleet = await startFleet({
  instances: 3,
  runtime: 'tsx',
  build: OLD,
  redisUrl: REDIS_URL,
  smtpUrl: smtp.url,
  logLevel: process.env.FLEET_LOG_LEVEL ?? 'warn',
  targetsFile: join(promDir, 'targets', 'fleet.json'),
  env: {
    RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
    AUTH_RATE_LIMIT_MAX: String(PASSWORD_GUESSES),
    // the mail test queues ~50 messages for one user: the per-user mail limit is not what it tests
    MAIL_RATE_LIMIT_MAX: '1000',
    // the test's own load on two shared cores must not be shed as overload
    MAX_EVENT_LOOP_DELAY_MS: '10000',
    METRICS_TOKEN,
    // the test's scrapes come right after the requests they count, and Prometheus scrapes every second
    METRICS_CACHE_MS: '0',
    METRICS_RATE_LIMIT_MAX: '1000'
  }
})
t.teardown(() => fleet.stop())
// `timeout` (test.sh) ends a stuck run with SIGTERM: take the fleet and its database down with it
process.once('SIGTERM', () => {
  void fleet.stop().finally(() => process.exit(1))
})
t.comment(
  `fleet up in ${Date.now() - started} ms on ${OLD.name} (the release to upgrade from): ${fleet.url}, ${fleet.instances.map(i => `${i.name}:${i.port}`).join(' ')}, PostgreSQL :${fleet.postgres!.port}, Redis ${REDIS_URL}, SMTP ${smtp.url}`
)
const NAMES = fleet.instances.map(i => i.name)

const db = new pg.Pool({ connectionString: fleet.databaseUrl, max: 3 })
db.on('error', () => {}) // the outage test stops the server under it
t.teardown(() => db.end())

async function countIn (table: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0
  const { rows } = await db.query(`select count(*)::int as n from "${table}" where id = any($1::text[])`, [ids])
  return rows[0].n
}

/** A new user with a verified address (the link sign-up queued, read from the database); a creator if asked. */
async function signUp (creator: boolean) {
  const mail = async (email: string) =>
    (await db.query('select body from outbox_message where to_address = $1 and subject = $2', [email, VERIFICATION_SUBJECT])).rows[0]?.body
  const user = await signUpVerified((method, path, body) => call(fleet, method, path, { body }), mail, `fleet-${randomUUID().slice(0, 8)}`, PASSWORD)
  // becoming a creator is an operator action (the CLI), done here in the database
  if (creator) await db.query('update "user" set is_creator = true where username = $1', [user.username])
  return user
}

const creator = await signUp(true)
const reader = await signUp(false)
const other = (name: string, k = 1) => NAMES[(NAMES.indexOf(name) + k) % NAMES.length]

// ---------------------------------------------------------------- the properties
const upgradeWrite = (label: string) => (n: number) =>
  call(fleet, 'POST', '/v1/posts', {
    headers: creator.auth,
    body: { title: `${label} ${n} ${randomUUID()}`, body: 'three words here', type: 'ARTICLE', tags: ['fleet'] }
  })
const migrationNames = async () => (await db.query('select name from kysely_migration order by name')).rows.map(r => r.name as string)

t.test('an upgrade whose migration fails stops, the old release serving on every instance and the database as it was', async t => {
  const before = await migrationNames()
  const failing = failingBuild(OLD.commit)
  t.teardown(() => failing.dispose())
  const reads = load(() => call(fleet, 'GET', '/v1/posts?limit=5'), 2)
  await t.rejects(rollingUpgrade(fleet, failing), /roja1 did not come up on .*failing migration; the upgrade stopped/)
  await reads.stop()
  t.same(tally(reads.outcomes), { 200: reads.outcomes.length }, `every read succeeded (${reads.outcomes.length})`)
  t.same(
    fleet.instances.map(i => i.build.name),
    NAMES.map(() => OLD.name),
    'every instance runs the old release'
  )
  t.same(await fleet.haproxy.states(), Object.fromEntries(NAMES.map(n => [n, 'UP'])), 'and takes requests')
  t.same(await migrationNames(), before, 'the database is at its previous version')
  t.equal((await db.query("select to_regclass('upgrade_probe') as probe")).rows[0].probe, null, 'with nothing of the failed migration')
  t.notOk(existsSync(join(fleet.dir, 'upgrade.lock')), 'and the upgrade lock released')
})

t.test('a rolling upgrade to this tree under load fails no request and loses no write; a second one meanwhile is refused', async t => {
  const before = await migrationNames()
  const writes = load(upgradeWrite('upgrade'), 4)
  const reads = load(() => call(fleet, 'GET', '/v1/posts?tags=fleet&limit=5'), 2)
  await sleep(1000)
  const began = Date.now()
  const upgrade = rollingUpgrade(fleet, NEW, line => t.comment(line))
  await t.rejects(rollingUpgrade(fleet, NEW), /an upgrade is already running/, 'a second upgrade is refused')
  const steps = await upgrade
  const took = Date.now() - began
  await sleep(1000)
  await Promise.all([writes.stop(), reads.stop()])
  const all = [...writes.outcomes, ...reads.outcomes]
  t.comment(
    `upgrade of ${steps.length} instances in ${took} ms; ${all.length} requests (${writes.outcomes.length} writes), ` +
      `outcomes ${JSON.stringify(tally(all))}`
  )
  t.same(tally(writes.outcomes), { 201: writes.outcomes.length }, 'every write succeeded')
  t.same(tally(reads.outcomes), { 200: reads.outcomes.length }, 'every read succeeded')
  const acknowledged = writes.outcomes.map(o => o.id!)
  t.equal(await countIn('post', acknowledged), acknowledged.length, `every 201 is in the database (${acknowledged.length})`)
  t.same(
    fleet.instances.map(i => i.build.name),
    NAMES.map(() => NEW.name),
    'every instance runs this tree'
  )
  const added = (await migrationNames()).filter(name => !before.includes(name))
  t.ok(added.length > 0, `the new release's migrations ran: ${added.join(', ')}`)
  const kinds = (await db.query('select name, kind from roja_migration_kind')).rows
  const recorded = kinds.filter(k => added.includes(k.name))
  t.same(
    recorded.map(k => k.name).sort(),
    added.filter(name => name >= '2026_11_29_0300'),
    `each recorded its kind: ${JSON.stringify(recorded)}`
  )
  // a post the old release wrote during the upgrade has no stored count: the new release counts it on read
  const oldWrite = writes.outcomes.find(o => o.servedBy === 'roja3' && o.startedAt < began + 1000)
  if (oldWrite) {
    const read = await call(fleet, 'GET', `/v1/posts/${oldWrite.id}`)
    t.equal((read.json as { word_count: number }).word_count, 3, 'a post the old release wrote shows its word count')
  }
})

t.test('rate limits are shared: the sum over all instances is enforced', async t => {
  // from 198.19/16, which no other request of the run uses: the loads' random clients (198.18/16)
  // number thousands in the window and could otherwise share this client's count
  const ip = `198.19.${randomBytes(1)[0]}.${1 + (randomBytes(1)[0] % 254)}`
  const answers: Answer[] = []
  for (let i = 0; i < RATE_LIMIT_MAX + 15; i++) answers.push(await call(fleet, 'GET', '/version', { ip }))
  const allowed = answers.filter(a => a.status === 200)
  t.equal(allowed.length, RATE_LIMIT_MAX, `${RATE_LIMIT_MAX} requests from one client are allowed in the window, across the fleet`)
  t.equal(answers[RATE_LIMIT_MAX - 1].status, 200, 'the last request inside the limit is answered')
  t.equal(answers[RATE_LIMIT_MAX].status, 429, 'the first request over it is refused')
  t.ok(
    answers
      .slice(RATE_LIMIT_MAX)
      .every(
        a =>
          a.status === 429 &&
          a.headers['retry-after'] &&
          a.json?.code === 'RateLimited' &&
          String(a.headers['content-type']).startsWith('application/problem+json')
      ),
    'every refusal is a RateLimited problem with Retry-After'
  )
  const perInstance = Object.fromEntries(NAMES.map(n => [n, allowed.filter(a => a.servedBy === n).length]))
  t.ok(
    NAMES.every(n => perInstance[n] > 0 && perInstance[n] < RATE_LIMIT_MAX),
    `all instances served, none alone reached the limit: ${JSON.stringify(perInstance)}`
  )
  t.equal((await call(fleet, 'GET', '/version', { ip: randomIp() })).status, 200, 'another client still gets through')
})

t.test('a forged X-Forwarded-For does not escape the password-guessing limit: it keys on the address HAProxy saw', async t => {
  const { username } = await signUp(false)
  const guess = (from: string, n: number, o: CallOptions = {}) =>
    call(fleet, 'POST', '/v1/auth/token', { body: { username, password: 'a wrong guess' }, from, ip: `10.9.0.${n}`, ...o })
  const client = clientAddress()
  const answers: Answer[] = []
  // a new forged X-Forwarded-For on each attempt; HAProxy appends the address it saw
  for (let n = 1; n <= PASSWORD_GUESSES + 3; n++) answers.push(await guess(client, n))
  t.same(
    answers.map(a => a.status),
    [...Array(PASSWORD_GUESSES).fill(401), 429, 429, 429],
    `${PASSWORD_GUESSES} wrong passwords are answered, then refused whatever X-Forwarded-For says`
  )
  t.ok(
    answers.slice(PASSWORD_GUESSES).every(a => a.json?.code === 'RateLimited' && a.headers['retry-after']),
    'a RateLimited problem with Retry-After'
  )
  t.ok(new Set(answers.map(a => a.servedBy)).size >= 2, `counted across instances: ${answers.map(a => a.servedBy).join(' ')}`)
  const right = await call(fleet, 'POST', '/v1/auth/token', { body: { username, password: PASSWORD }, from: client, ip: '10.9.0.200' })
  t.equal(right.status, 429, 'the right password too is refused to that client for now')
  const other = await call(fleet, 'POST', '/v1/auth/token', { body: { username, password: PASSWORD }, from: clientAddress(), ip: '10.9.0.1' })
  t.equal(other.status, 200, 'another client, forging the same first X-Forwarded-For, has its own count and logs in')

  // An instance trusts X-Forwarded-For only from HAProxy's address: a client reaching it
  // directly is counted by its own address, whatever it forges.
  const direct = clientAddress()
  const instance = fleet.instances[0]
  const straight: number[] = []
  for (let n = 1; n <= PASSWORD_GUESSES + 2; n++) straight.push((await guess(direct, n, { port: instance.port })).status)
  t.same(straight, [...Array(PASSWORD_GUESSES).fill(401), 429, 429], `directly at ${instance.name}, a forged X-Forwarded-For is not believed`)
})

t.test('the password limit holds while Redis is stopped: each instance counts on its own, never off', async t => {
  const { username } = await signUp(false)
  redisServer.kill('SIGKILL')
  await new Promise(resolve => redisServer.once('exit', resolve))
  const client = clientAddress()
  const statuses: number[] = []
  const guesses = PASSWORD_GUESSES * NAMES.length
  for (let n = 0; n < guesses + NAMES.length; n++) {
    statuses.push((await call(fleet, 'POST', '/v1/auth/token', { body: { username, password: 'a wrong guess' }, from: client })).status)
  }
  t.ok(statuses.filter(s => s === 401).length <= guesses, `at most ${PASSWORD_GUESSES} wrong passwords answered per instance: ${statuses.join(' ')}`)
  t.same(
    statuses.slice(-NAMES.length),
    NAMES.map(() => 429),
    'then every instance refuses'
  )
  const right = await call(fleet, 'POST', '/v1/auth/token', { body: { username, password: PASSWORD }, from: client })
  t.equal(right.status, 429, 'the right password too')
  const fellBack = await Promise.all(
    fleet.instances.map(async i => metricSamples((await direct(i, '/metrics', scraper)).body, 'roja_rate_limit_store_fallbacks_total')[0]?.value ?? 0)
  )
  t.ok(
    fellBack.every(n => n > 0),
    `each instance counted its fallbacks: ${fellBack.join(', ')}`
  )
  redisServer = await startRedis(REDIS_PORT)
  // shared again once each instance has reconnected: a new client's guesses count across them
  let shared = false
  for (let i = 0; i < 50 && !shared; i++) {
    await sleep(200)
    const probe = clientAddress()
    const answers: number[] = []
    for (let n = 0; n <= PASSWORD_GUESSES; n++) {
      answers.push((await call(fleet, 'POST', '/v1/auth/token', { body: { username, password: 'a wrong guess' }, from: probe })).status)
    }
    shared = answers.at(-1) === 429
  }
  t.ok(shared, 'with Redis back, the count is shared across the instances again')
})

t.test('an Idempotency-Key retried on another instance replays and creates nothing', async t => {
  const key = randomUUID()
  const body = { title: `idem ${randomUUID()}`, type: 'ARTICLE' }
  const first = await call(fleet, 'POST', '/v1/posts', { body, headers: { ...creator.auth, 'idempotency-key': key }, instance: 'roja1' })
  const retry = await call(fleet, 'POST', '/v1/posts', { body, headers: { ...creator.auth, 'idempotency-key': key }, instance: 'roja2' })
  t.equal(first.status, 201)
  t.same([first.servedBy, retry.servedBy], ['roja1', 'roja2'], 'the retry landed on another instance')
  t.equal(retry.status, 201, 'the retry gets the first answer')
  t.equal(retry.json?.id, first.json?.id, 'with the same post')
  t.equal(retry.headers.location, first.headers.location)
  t.equal(retry.headers['idempotent-replayed'], 'true')
  const other = await call(fleet, 'POST', '/v1/posts', {
    body: { ...body, title: 'another body' },
    headers: { ...creator.auth, 'idempotency-key': key },
    instance: 'roja3'
  })
  t.equal(other.status, 422, 'the same key with another body is refused on a third instance')
  const { rows } = await db.query('select count(*)::int as n from post where title = $1 or title = $2', [body.title, 'another body'])
  t.equal(rows[0].n, 1, 'one post in the database')
})

t.test('an Idempotency-Key sent to two instances at once creates one post', async t => {
  const rounds = 8
  const titles: string[] = []
  for (let r = 0; r < rounds; r++) {
    const key = randomUUID()
    const body = { title: `idem-race ${randomUUID()}`, type: 'ARTICLE' }
    titles.push(body.title)
    const [a, b] = [NAMES[r % 3], NAMES[(r + 1) % 3]]
    const pair = await Promise.all(
      [a, b].map(instance => call(fleet, 'POST', '/v1/posts', { body, headers: { ...creator.auth, 'idempotency-key': key }, instance }))
    )
    t.same(
      pair.map(p => p.status),
      [201, 201],
      `round ${r}: both answered 201 (${a}, ${b})`
    )
    t.equal(pair[0].json?.id, pair[1].json?.id, `round ${r}: with the same post`)
    t.equal(pair.filter(p => p.headers['idempotent-replayed'] === 'true').length, 1, `round ${r}: one of them is the replay`)
  }
  const { rows } = await db.query('select title, count(*)::int as n from post where title = any($1) group by title', [titles])
  t.equal(rows.length, rounds, 'every round created its post')
  t.ok(
    rows.every(r => r.n === 1),
    'and only one'
  )
})

t.test('list totals and caches stay exact when writes land on one instance and reads on another', async t => {
  const c = await signUp(true)
  const totals = async (instance: string) => {
    const [pub, mine, byCreator] = await Promise.all([
      call(fleet, 'GET', `/v1/posts?creator_id=${c.id}`, { instance }),
      call(fleet, 'GET', '/v1/users/me/posts', { instance, headers: c.auth }),
      call(fleet, 'GET', `/v1/creators/${c.id}/posts`, { instance })
    ])
    return [pub.json?.total, mine.json?.total, byCreator.json?.total]
  }
  // every instance reads first, so whatever it caches is warm before the writes
  for (const n of NAMES) t.same(await totals(n), [0, 0, 0], `${n} starts at 0`)
  const ids: string[] = []
  let expected = 0
  for (let i = 0; i < 9; i++) {
    const writer = NAMES[i % 3]
    if (i % 3 === 2) {
      const res = await call(fleet, 'DELETE', `/v1/posts/${ids.shift()}`, { instance: writer, headers: c.auth })
      t.equal(res.status, 204)
      expected--
    } else {
      const res = await call(fleet, 'POST', '/v1/posts', {
        instance: writer,
        headers: c.auth,
        body: { title: `total ${i} ${randomUUID()}`, type: 'ARTICLE' }
      })
      t.equal(res.status, 201)
      ids.push(res.json.id)
      expected++
    }
    for (const reader of [other(writer, 1), other(writer, 2)]) {
      t.same(await totals(reader), [expected, expected, expected], `write ${i} on ${writer}: ${reader} counts ${expected}`)
    }
  }

  // a change on one instance is what the others serve at once: title and ETag
  const postId = ids[0]
  const before = await call(fleet, 'GET', `/v1/posts/${postId}`, { instance: 'roja2' })
  const put = await call(fleet, 'PUT', `/v1/posts/${postId}`, {
    instance: 'roja1',
    headers: c.auth,
    body: { title: 'renamed on roja1', type: 'ARTICLE' }
  })
  t.equal(put.status, 200)
  for (const n of ['roja2', 'roja3']) {
    const after = await call(fleet, 'GET', `/v1/posts/${postId}`, { instance: n, headers: { 'if-none-match': String(before.headers.etag) } })
    t.equal(after.status, 200, `${n}: the old ETag no longer matches`)
    t.equal(after.json?.title, 'renamed on roja1', `${n} serves the new title`)
  }

  // comments: written on one, counted on the others
  for (let i = 0; i < 3; i++) {
    t.equal(
      (await call(fleet, 'POST', `/v1/posts/${postId}/comments`, { instance: NAMES[i], headers: reader.auth, body: { text: `comment ${i}` } }))
        .status,
      201
    )
    for (const n of [other(NAMES[i], 1), other(NAMES[i], 2)]) {
      t.equal(
        (await call(fleet, 'GET', `/v1/posts/${postId}/comments`, { instance: n })).json?.total,
        i + 1,
        `comment ${i} on ${NAMES[i]}: ${n} counts ${i + 1}`
      )
    }
  }

  // a ban (an operator action in the database) holds on every instance at once
  const banned = await signUp(false)
  for (const n of NAMES) t.equal((await call(fleet, 'GET', '/v1/profiles/me', { instance: n, headers: banned.auth })).status, 200)
  await db.query('update "user" set is_active = false where id = $1', [banned.id])
  for (const n of NAMES) {
    const res = await call(fleet, 'GET', '/v1/profiles/me', { instance: n, headers: banned.auth })
    t.equal(res.json?.code, 'UserIsBanned', `${n} refuses the banned user`)
  }
})

t.test('each queued e-mail is delivered exactly once while every instance runs its outbox worker', async t => {
  const sentBefore = await sentByInstance()
  const count = 45
  const queued = load(async () => call(fleet, 'POST', `/v1/users/${reader.id}/email`, { headers: reader.auth }), 5)
  while (queued.outcomes.length < count) await sleep(20)
  await queued.stop()
  t.ok(
    queued.outcomes.every(o => o.status === 202),
    `every request queued its e-mail: ${JSON.stringify(tally(queued.outcomes))}`
  )
  const { rows } = await db.query('select id from outbox_message where to_address = $1 and subject = $2', [reader.email, 'Your Roja account summary'])
  t.equal(rows.length, queued.outcomes.length, 'one outbox message per request')
  const expected = new Set(rows.map(r => `<${r.id}@roja.outbox>`))

  const deadline = Date.now() + 60_000
  let unsent = -1
  while (Date.now() < deadline) {
    unsent = (await db.query('select count(*)::int as n from outbox_message where sent_at is null')).rows[0].n
    if (unsent === 0) break
    await sleep(200)
  }
  t.equal(unsent, 0, 'every message is marked sent')
  await sleep(1500) // a message delivered twice would reach the server within this
  const received = messageIds().filter(id => expected.has(id))
  t.equal(new Set(received).size, expected.size, 'the SMTP server received every message')
  t.equal(received.length, expected.size, 'and each one once')
  const duplicates = messageIds().length - new Set(messageIds()).size
  t.equal(duplicates, 0, `no message at all arrived twice (${messageIds().length} received in the whole run)`)
  const sentAfter = await sentByInstance()
  const delivered = Object.fromEntries(NAMES.map(n => [n, sentAfter[n] - sentBefore[n]]))
  t.ok(Object.values(delivered).filter(v => v > 0).length >= 2, `two or more workers delivered: ${JSON.stringify(delivered)}`)
})

/** roja_outbox_sent_total of each instance, read from its own /metrics */
async function sentByInstance (): Promise<Record<string, number>> {
  const result: Record<string, number> = {}
  for (const i of fleet.instances) {
    const text = (await direct(i, '/metrics', scraper)).body
    result[i.name] = Number(/^roja_outbox_sent_total(?:\{\})? (\d+)/m.exec(text)?.[1] ?? 0)
  }
  return result
}

const writePost = (label: string) => (n: number) =>
  call(fleet, 'POST', '/v1/posts', { headers: creator.auth, body: { title: `${label} ${n} ${randomUUID()}`, type: 'ARTICLE', tags: ['fleet'] } })

t.test('kill -9 of an instance during a write burst loses no acknowledged write; HAProxy stops sending to it', async t => {
  const victim = fleet.instances[2]
  const burst = load(writePost('kill9'), 6)
  await sleep(1500)
  const killedAt = Date.now()
  victim.child!.kill('SIGKILL')
  await victim.exit
  await fleet.haproxy.waitFor([victim.name], 'DOWN', 10_000)
  const downAt = Date.now()
  await sleep(1500)
  await burst.stop()
  t.comment(`outcomes ${JSON.stringify(tally(burst.outcomes))}; marked down ${downAt - killedAt} ms after the kill`)

  const acknowledged = burst.outcomes.filter(o => o.status === 201).map(o => o.id!)
  t.ok(acknowledged.length >= 20, `the burst wrote (${acknowledged.length} acknowledged)`)
  t.equal(await countIn('post', acknowledged), acknowledged.length, 'every 201 is in the database')
  t.ok(
    burst.outcomes.some(o => o.servedBy === victim.name && o.startedAt < killedAt),
    `${victim.name} took writes before the kill`
  )
  const after = burst.outcomes.filter(o => o.startedAt > downAt)
  t.ok(after.length > 0, 'the burst went on after HAProxy took it out')
  t.equal(after.filter(o => o.servedBy === victim.name).length, 0, `nothing was sent to ${victim.name} once it was down`)
  t.same(tally(after), { 201: after.length }, 'and every later write succeeded on the others')

  await victim.start()
  await fleet.haproxy.waitFor([victim.name], 'UP', 10_000)
  t.pass(`${victim.name} restarted and HAProxy sends to it again`)
})

t.test('SIGTERM drains an instance with no failed request', async t => {
  const victim = fleet.instances[1]
  const burst = load(writePost('sigterm'), 6)
  const reads = load(() => call(fleet, 'GET', '/v1/posts?tags=fleet&limit=5'), 2)
  await sleep(1500)
  t.ok(
    burst.outcomes.some(o => o.servedBy === victim.name),
    `${victim.name} takes writes before the signal`
  )
  const signalledAt = Date.now()
  victim.child!.kill('SIGTERM')
  let downAt = 0
  const down = fleet.haproxy.waitFor([victim.name], 'DOWN', 10_000).then(() => {
    downAt = Date.now()
  })
  const exit = await victim.exit!
  const exitedAt = Date.now()
  await down
  t.ok(downAt <= exitedAt, `HAProxy took it out (after ${downAt - signalledAt} ms) before it exited (${exitedAt - signalledAt} ms)`)
  await sleep(1000)
  await Promise.all([burst.stop(), reads.stop()])
  const all = [...burst.outcomes, ...reads.outcomes]
  t.comment(`outcomes ${JSON.stringify(tally(all))}; exited ${exitedAt - signalledAt} ms after SIGTERM`)
  if (!t.same(exit, { code: 0, signal: null }, 'the instance exited cleanly')) t.comment(victim.log.join('').slice(-4000))
  t.same(tally(burst.outcomes), { 201: burst.outcomes.length }, 'every write succeeded')
  t.same(tally(reads.outcomes), { 200: reads.outcomes.length }, 'every read succeeded')
  const acknowledged = burst.outcomes.map(o => o.id!)
  t.equal(await countIn('post', acknowledged), acknowledged.length, 'every 201 is in the database')
  t.equal(all.filter(o => o.servedBy === victim.name && o.startedAt > exitedAt).length, 0, `nothing was sent to ${victim.name} after it exited`)

  await victim.start()
  await fleet.haproxy.waitFor([victim.name], 'UP', 10_000)
})

t.test('PostgreSQL restarted under load: 503 with Retry-After meanwhile, then recovery without restarting Roja', async t => {
  const pids = fleet.instances.map(i => i.pid)
  const burst = load(writePost('outage'), 4)
  const reads = load(() => call(fleet, 'GET', '/v1/posts?tags=fleet&limit=5'), 2)
  await sleep(1000)
  const stoppedAt = Date.now()
  fleet.postgres!.stop()
  await sleep(1500)
  // An instance asked directly answers for itself; through HAProxy, which takes the instances out
  // within a second, most refusals are the balancer's own.
  const own = await call(fleet, 'GET', '/v1/posts?tags=fleet&limit=5', { port: fleet.instances[0].port })
  await sleep(1500)
  const startedAt = Date.now()
  fleet.postgres!.start()
  // recovered: a write through the balancer succeeds again
  let recoveredAt = 0
  while (Date.now() - startedAt < 20_000) {
    const probe = await writePost('probe')(0).catch(() => undefined)
    if (probe?.status === 201) {
      recoveredAt = Date.now()
      break
    }
    await sleep(100)
  }
  await sleep(1000)
  await Promise.all([burst.stop(), reads.stop()])
  const all = [...burst.outcomes, ...reads.outcomes]
  t.comment(`outcomes ${JSON.stringify(tally(all))}; recovered ${recoveredAt - startedAt} ms after the database started`)

  const during = all.filter(o => o.startedAt > stoppedAt + 200 && o.endedAt < startedAt)
  t.ok(during.length > 0 && during.every(o => o.status === 503), `while the database is down every answer is 503 (${JSON.stringify(tally(during))})`)
  const refusals = all.filter(o => o.status !== 200 && o.status !== 201)
  const clean = (o: Outcome) =>
    o.status === 503 &&
    o.answer!.headers['retry-after'] !== undefined &&
    o.answer!.json?.code === 'ServiceUnavailable' &&
    String(o.answer!.headers['content-type']).startsWith('application/problem+json')
  if (
    !t.same(
      refusals.filter(o => !clean(o)).map(o => o.answer?.body ?? o.status),
      [],
      'every refusal, from an instance or from HAProxy, is a ServiceUnavailable problem with Retry-After'
    )
  ) {
    for (const i of fleet.instances) {
      t.comment(
        `${i.name}: ${i.log
          .join('')
          .split('\n')
          .filter(l => l.includes('request failed') && !l.includes('ServiceUnavailable'))
          .slice(-3)
          .join('\n')}`
      )
    }
  }
  t.ok(
    clean({ status: own.status, startedAt: 0, endedAt: 0, answer: own }),
    `an instance itself answers 503 ServiceUnavailable with Retry-After (${own.status} ${own.body.slice(0, 120)}); through HAProxy ${refusals.filter(o => o.servedBy).length} of the refusals were the instances'`
  )
  t.ok(recoveredAt > 0, 'writes succeed again after the database is back')
  const later = all.filter(o => o.startedAt > recoveredAt + 500)
  t.ok(later.length > 0 && later.every(o => o.status === 200 || o.status === 201), `and keep succeeding (${JSON.stringify(tally(later))})`)
  for (const i of fleet.instances) t.equal((await direct(i, '/health')).status, 200, `${i.name} is healthy again`)
  t.same(
    fleet.instances.map(i => i.pid),
    pids,
    'no instance was restarted'
  )
  t.ok(
    fleet.instances.every(i => i.running),
    'all still running'
  )
  const acknowledged = burst.outcomes.filter(o => o.status === 201).map(o => o.id!)
  t.equal(await countIn('post', acknowledged), acknowledged.length, `every 201 is in the database (${acknowledged.length})`)
})

// ---------------------------------------------------------------- monitoring
const versionCount = (text: string) =>
  metricSamples(text, 'http_request_duration_seconds_count')
    .filter(s => s.labels.method === 'GET' && s.labels.route === '/version' && s.labels.status_code === '200')
    .reduce((sum, s) => sum + s.value, 0)

t.test('every instance is in the Prometheus targets file, each scrape answers its own counters, and the balancer refuses /metrics', async t => {
  const groups = JSON.parse(readFileSync(fleet.targetsFile, 'utf8')) as TargetGroup[]
  t.equal(groups.length, 1, `one target group in ${fleet.targetsFile}`)
  t.same(groups[0].labels.job, 'roja', 'labelled job="roja", as ops/prometheus/prometheus.yml, the alerts and the dashboard select')
  const targets = groups[0].targets
  t.same([...targets].sort(), fleet.instances.map(i => `127.0.0.1:${i.port}`).sort(), 'listing every instance, and nothing else')

  // promtool reads the targets file through the shipped config (a file it cannot parse, or a
  // pattern that finds none, is reported) and the rules the config loads
  const check = spawnSync('promtool', ['check', 'config', join(promDir, 'prometheus.yml')], { encoding: 'utf8' })
  const report = `${check.stdout}${check.stderr}`
  t.equal(check.status, 0, `promtool check config passes:\n${report}`)
  t.notMatch(report, /WARNING|FAILED/, 'with the targets file found and valid')

  const scrape = async (target: string, headers: Record<string, string> = scraper) => {
    const res = await fetch(`http://${target}/metrics`, { headers })
    return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() }
  }
  for (const target of targets) {
    t.equal((await scrape(target, {})).status, 401, `${target}: a scrape without the token is refused`)
  }
  // a different number of requests to each instance, then each target's count must have grown by its own
  const before = Object.fromEntries(await Promise.all(targets.map(async target => [target, versionCount((await scrape(target)).text)] as const)))
  const sent: Record<string, number> = {}
  for (const [k, instance] of fleet.instances.entries()) {
    sent[`127.0.0.1:${instance.port}`] = k + 2
    for (let n = 0; n < k + 2; n++) t.equal((await call(fleet, 'GET', '/version', { instance: instance.name })).servedBy, instance.name)
  }
  for (const target of targets) {
    const { status, type, text } = await scrape(target)
    t.equal(status, 200, `${target} answers the scrape`)
    t.match(type, /^text\/plain; version=0\.0\.4/, 'in Prometheus text format')
    t.match(text, /^# TYPE http_request_duration_seconds histogram$/m)
    t.equal(versionCount(text) - before[target], sent[target], `${target} counts the ${sent[target]} requests its own instance answered`)
  }

  // Through the balancer the answer would be one instance's, chosen at random: HAProxy refuses it
  // itself (no X-Served-By), however the path is spelled and whichever instance is asked for.
  for (const [path, o] of [
    ['/metrics', {}],
    ['/metrics', { instance: 'roja1' }],
    ['/%6detrics', {}],
    ['/metrics?x=1', {}],
    ['/metrics/', {}]
  ] as Array<[string, CallOptions]>) {
    const res = await call(fleet, 'GET', path, { ...o, headers: scraper })
    t.equal(res.status, 404, `GET ${path} through the balancer${o.instance ? ` asking for ${o.instance}` : ''} is 404`)
    t.equal(res.json?.code, 'NotFound', 'a NotFound problem')
    t.match(String(res.headers['content-type']), /^application\/problem\+json/)
    t.equal(res.servedBy, undefined, 'from HAProxy, not an instance')
  }
  t.equal((await call(fleet, 'GET', '/health')).status, 200, '/health still passes through')
  t.same(await fleet.haproxy.states(), Object.fromEntries(NAMES.map(n => [n, 'UP'])), "and HAProxy's checks see every instance up")
})

t.test('Prometheus with ops/prometheus/prometheus.yml scrapes every instance of the targets file, with the token, and loads the alerts', async t => {
  const config = join(promDir, 'prometheus.yml')
  const shipped = readFileSync(config, 'utf8')
  // every second rather than the shipped 15 s, so the test waits for one scrape, not a quarter minute
  const quick = shipped
    .replace(/^(\s+)scrape_interval: 15s$/m, '$1scrape_interval: 1s')
    .replace(/^(\s+)evaluation_interval: 15s$/m, '$1evaluation_interval: 1s')
  t.equal(quick.split('\n').filter((l, n) => l !== shipped.split('\n')[n]).length, 2, 'only the two intervals changed')
  writeFileSync(config, quick)
  const port = await freePort()
  const api = `http://127.0.0.1:${port}/api/v1`
  const prometheus = spawn(
    'prometheus',
    [`--config.file=${config}`, `--storage.tsdb.path=${join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] }
  )
  const log: string[] = []
  prometheus.stdout.on('data', (c: Buffer) => log.push(String(c)))
  prometheus.stderr.on('data', (c: Buffer) => log.push(String(c)))
  const exited = new Promise(resolve => prometheus.once('exit', resolve))
  process.once('exit', () => prometheus.kill('SIGKILL'))
  t.teardown(async () => {
    prometheus.kill('SIGTERM')
    await exited
  })

  interface Target {
    labels: Record<string, string>
    scrapeUrl: string
    health: string
    lastError: string
  }
  let active: Target[] = []
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline && prometheus.exitCode === null) {
    const res = await fetch(`${api}/targets?state=active`).catch(() => undefined)
    active = res?.ok ? ((await res.json()) as { data: { activeTargets: Target[] } }).data.activeTargets : []
    if (active.length === fleet.instances.length && active.every(a => a.health === 'up')) break
    await sleep(250)
  }
  if (
    !t.ok(
      active.length > 0 && active.every(a => a.health === 'up'),
      `every target is up: ${JSON.stringify(active.map(a => [a.scrapeUrl, a.health, a.lastError]))}`
    )
  ) { t.comment(log.join('').slice(-3000)) }
  t.same(
    active.map(a => a.scrapeUrl).sort(),
    fleet.instances.map(i => `http://127.0.0.1:${i.port}/metrics`).sort(),
    'one target per instance, each on its own port'
  )
  t.ok(
    active.every(a => a.labels.job === 'roja'),
    'in job roja'
  )

  const query = async (q: string) =>
    (
      (await (await fetch(`${api}/query?query=${encodeURIComponent(q)}`)).json()) as {
        data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }
      }
    ).data.result
  const series = await query('sum by (instance) (http_request_duration_seconds_count{job="roja"})')
  t.equal(
    series.length,
    fleet.instances.length,
    `the request counts of every instance are stored: ${JSON.stringify(series.map(s => [s.metric.instance, s.value[1]]))}`
  )
  const rules = (
    (await (await fetch(`${api}/rules`)).json()) as { data: { groups: Array<{ name: string; rules: Array<{ name: string; health: string }> }> } }
  ).data.groups
  const alerts = readFileSync(join(OPS_PROMETHEUS, 'alerts.yml'), 'utf8').match(/^\s+- alert: /gm)!.length
  t.same(
    rules.map(g => [g.name, g.rules.length]),
    [['roja', alerts]],
    `alerts.yml's ${alerts} rules are loaded`
  )
})

// ---------------------------------------------------------------- npm run fleet, stopped by SIGTERM
/** Every process whose parent chain leads to `root` (ppid from /proc). */
function descendants (root: number): number[] {
  const parentOf = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {} // gone meanwhile
  }
  const found: number[] = []
  let frontier = [root]
  while (frontier.length > 0) {
    frontier = [...parentOf].filter(([, parent]) => frontier.includes(parent)).map(([pid]) => pid)
    found.push(...frontier)
  }
  return found
}

/** Running, not a zombie waiting to be reaped. */
function alive (pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

t.test('SIGTERM to the PID of `npm run fleet` leaves no process of the fleet running and nothing listening', async t => {
  // As a shell with job control starts it: a process group of its own, so the signal reaches npm alone.
  // The sources, as for the fleet above: the stop is under test, not the build (which in a fresh
  // clone takes a minute, and fails on any type error in a work tree).
  const env: Record<string, string | undefined> = { ...process.env, REDIS_URL, LOG_LEVEL: 'warn', FLEET_RUNTIME: 'tsx' }
  for (const name of ['DATABASE_URL', 'FLEET_PORT', 'FLEET_INSTANCES', 'FLEET_TARGETS_FILE', 'METRICS_TOKEN']) delete env[name]
  const npm = spawn('npm', ['run', 'fleet'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  const npmExit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(resolve =>
    npm.once('exit', (code, signal) => resolve({ code, signal }))
  )
  let out = ''
  npm.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c
  })
  npm.stderr.setEncoding('utf8').on('data', (c: string) => {
    out += c
  })
  const recorded = new Set<number>()
  let postmaster = 0
  const folders: string[] = []
  // should the test fail half-way, nothing it started outlives it (PostgreSQL: an immediate shutdown)
  t.teardown(async () => {
    for (const pid of [npm.pid!, ...recorded]) if (alive(pid)) process.kill(pid, pid === postmaster ? 'SIGQUIT' : 'SIGKILL')
    for (let n = 0; n < 50 && alive(postmaster); n++) await sleep(100)
    for (const folder of folders) rmSync(folder, { recursive: true, force: true })
  })

  const startedAt = Date.now()
  while (!/^balancer: /m.test(out) && npm.exitCode === null && Date.now() - startedAt < 120_000) await sleep(100)
  if (!t.match(out, /^balancer: /m, `npm run fleet printed the balancer's URL (after ${Date.now() - startedAt} ms)`)) {
    t.comment(out.slice(-4000))
    return
  }
  const balancer = Number(/^balancer: http:\/\/127\.0\.0\.1:(\d+)/m.exec(out)![1])
  const instances = [...out.matchAll(/roja\d+ http:\/\/127\.0\.0\.1:(\d+) \(pid (\d+)\)/g)].map(m => ({ port: Number(m[1]), pid: Number(m[2]) }))
  const [, pgPort, pgDir] = /private cluster on port (\d+) in (\S+)/.exec(out)!
  const targetsFile = /^prometheus targets: (\S+)/m.exec(out)![1]
  folders.push(pgDir, dirname(targetsFile))
  const runner = Number(/kill (\d+)/.exec(out)![1])
  t.equal(instances.length, 3, 'three instances')
  t.equal((await fetch(`http://127.0.0.1:${balancer}/health`)).status, 200, 'the balancer answers')
  t.same(
    (JSON.parse(readFileSync(targetsFile, 'utf8')) as TargetGroup[])[0].targets.sort(),
    instances.map(i => `127.0.0.1:${i.port}`).sort(),
    'the targets file lists them'
  )

  // npm's shell, the fleet runner, the instances and HAProxy; PostgreSQL is pg_ctl's daemon, found by its pid file
  postmaster = Number(readFileSync(join(pgDir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
  for (const pid of [...descendants(npm.pid!), postmaster, ...descendants(postmaster)]) recorded.add(pid)
  const commands = [...recorded].map(pid => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')
    } catch {
      return ''
    }
  })
  t.ok(recorded.has(runner) && instances.every(i => recorded.has(i.pid)), "the runner and the instances are npm's descendants")
  t.ok(
    commands.some(c => c.startsWith('haproxy ')),
    'HAProxy is one of them'
  )
  t.ok(recorded.size >= 7, `${recorded.size} processes recorded`)
  const ports = [balancer, ...instances.map(i => i.port), Number(pgPort)]
  t.same(
    await Promise.all(ports.map(listening)),
    ports.map(() => true),
    `listening on ${ports.join(', ')}`
  )

  const signalledAt = Date.now()
  process.kill(npm.pid!, 'SIGTERM')
  const exit = await Promise.race([npmExit, sleep(15_000, undefined, { ref: false }).then(() => undefined)])
  t.ok(exit, `npm exited (${JSON.stringify(exit)})`)
  // npm does not wait for its script once signalled: the fleet stops on its own, draining first
  while (Date.now() - signalledAt < 30_000 && ([...recorded].some(alive) || (await Promise.all(ports.map(listening))).some(Boolean))) await sleep(100)
  const stoppedIn = Date.now() - signalledAt
  t.same(
    [...recorded].filter(alive).map(pid => `${pid} ${commands[[...recorded].indexOf(pid)]}`),
    [],
    `no process of the fleet is left (${stoppedIn} ms after the signal)`
  )
  t.same(
    await Promise.all(ports.map(listening)),
    ports.map(() => false),
    'nothing listens on the balancer, instance or database ports'
  )
  t.notOk(existsSync(pgDir), 'the private cluster is deleted')
  t.notOk(existsSync(targetsFile), 'and so is the targets file')
  t.match(out, /stopping the balancer, the instances, then the database/, 'the runner stopped them in order')
})
