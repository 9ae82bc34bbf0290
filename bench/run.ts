/**
 * The benchmark (`npm run bench [-- group …]`; never part of npm test). Starts Roja as a child
 * process with production settings on seeded databases and measures each figure beside its
 * baseline in the same run, target after target within every round, so a busy machine slows both
 * sides of a ratio alike. Ratios are taken per round; the median of the rounds is reported.
 *
 * The groups, their baselines, goals and settings: bench/README.md. Prints a table per dialect with
 * its goals and verdicts and writes bench/.tmp/results.json (a full run) or bench/.tmp/results-*.json
 * (a selection, the smoke).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
// @ts-expect-error autocannon ships no types; the part used here is typed below
import autocannonUntyped from 'autocannon'
import { sql } from '../src/db/kysely.js'
import pg from 'pg'
import { createDb } from '../src/db/dialect.js'
import { SEED_PASSWORD } from '../scripts/seed.js'
import { cpuMs, cpuMsByCommand, freePort, machineTicks, npmStartArgs, rssBytes, stolenShare } from '../scripts/proc.js'
import { withLockWaits, type LockWaits } from './lock-waits.js'

interface Result {
  requests: { average: number; total: number }
  latency: { p50: number; p99: number }
  errors: number
  timeouts: number
  non2xx: number
}
interface CannonRequest {
  method?: string
  path?: string
  headers?: Record<string, string>
  body?: string
}
const autocannon = autocannonUntyped as (opts: {
  url: string
  connections: number
  duration: number
  method: string
  headers: Record<string, string>
  requests?: Array<{ setupRequest: (req: CannonRequest) => CannonRequest }>
}) => Promise<Result>

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const env = process.env
const SMOKE = env.BENCH_SMOKE === '1'
// --quick: the groups with verdicts, in three short rounds, without the same-SQL limit (under three
// minutes with BENCH_REUSE=1)
const QUICK = process.argv.includes('--quick')
const num = (name: string, normal: number, smoke: number, quick = normal) => Number(env[name] ?? (SMOKE ? smoke : QUICK ? quick : normal))
// Five short rounds: on a shared machine load comes in bursts of seconds, and the median of five
// same-round ratios drops two bursts either way. 1.5 s rounds keep a whole run within ten minutes.
const RUNS = num('BENCH_RUNS', 5, 1, 3)
// The smoke's rounds are short but not so short that a target still cold on a busy CI machine
// answers nothing in one (a 0.3 s round of the PostgreSQL write baseline once did).
const DURATION = num('BENCH_DURATION', 1.5, 0.6, 0.7)
const WARMUP = num('BENCH_WARMUP', 1, 0.5, 0.3)
// cold starts per build in `startup` (the median is reported)
const STARTS = num('BENCH_STARTS', 3, 1, 1)
const CONNECTIONS = num('BENCH_CONNECTIONS', 50, 10)
const SMALL = num('BENCH_SMALL', 10_000, 300)
const LARGE = num('BENCH_LARGE', 1_000_000, 1_000)
// Seeding is bounded: a seeder that slows down (heavier triggers, say) fails the run instead of eating it.
const SEED_LIMIT_S = num('BENCH_SEED_TIMEOUT', Math.max(120, LARGE / 1000), 120)
const CURSOR_PAGE = Math.min(1000, Math.floor((LARGE * 0.9) / 10))
const DIALECTS = (env.BENCH_DIALECTS ?? 'sqlite,postgres').split(',')
const PG_URL = env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CPU_PROF = env.BENCH_CPU_PROF === '1'
const REUSE = env.BENCH_REUSE === '1'
// BENCH_BEFORE=<git rev>: Roja as it was at that commit runs beside today's in `chain`, `uncached` and
// `writes` (same data, same requests, same rounds): a change's before/after measured in one run.
const BEFORE = env.BENCH_BEFORE
const BEFORE_DIR = join(ROOT, 'bench', '.tmp', 'before')
// the same-SQL server beside the like-for-like one: a limit, without a verdict (left out by --quick)
const LIMITS = !QUICK
// Built JavaScript like `npm start`; the smoke runs the TypeScript through tsx unless told (CI: dist).
// BENCH_BUILD=dist: the existing dist/ as it is (repeated runs).
const BUILT = env.BENCH_BUILD ? env.BENCH_BUILD !== '0' : !SMOKE
const RUN_ID = randomBytes(3).toString('hex')
const TMP = join(ROOT, 'bench', '.tmp', `run-${RUN_ID}`)
const CACHE = join(ROOT, 'bench', '.tmp', 'cache')
const JWT_SECRET = randomBytes(48).toString('base64url')
// the writers' GET /metrics: their query metric counts the statements of a create
const METRICS_TOKEN = randomBytes(24).toString('base64url')
const METRICS_ENV = { METRICS_TOKEN, METRICS_CACHE_MS: '0' }
// Roja runs behind a TLS-terminating proxy in production; it trusts exactly the loopback address.
const PROTO = { 'x-forwarded-proto': 'https' }
const children = new Set<ChildProcess>()
const stopping = new Set<ChildProcess>()
/** servers that exited without the harness stopping them */
const died: string[] = []

const GOAL_GROUPS = ['chain', 'uncached', 'writes', 'fleet', 'size', 'cursor', 'startup']
const ALL_GROUPS = GOAL_GROUPS
// `npm run bench -- chain uncached` or BENCH_ONLY=chain,uncached; default: every group with goals.
const named = [...process.argv.slice(2).filter(a => a !== '--quick'), ...(env.BENCH_ONLY?.split(',') ?? [])].filter(Boolean)
const unknown = named.filter(g => !ALL_GROUPS.includes(g))
if (unknown.length) {
  console.error(`unknown group(s): ${unknown.join(', ')}; the groups are ${ALL_GROUPS.join(', ')}`)
  process.exit(2)
}
const GROUPS = named.length ? ALL_GROUPS.filter(g => named.includes(g)) : QUICK ? GOAL_GROUPS.filter(g => g !== 'chain') : GOAL_GROUPS
const wanted = (name: string) => GROUPS.includes(name)

interface Server {
  name: string
  port: number
  child: ChildProcess
  readyMs: number
  url: string
}
/** each server's process by its URL: a target's CPU time is read from the processes it loads */
const pidOf = new Map<string, number>()
/** the servers on PostgreSQL: their targets also read PostgreSQL's CPU time */
const onPostgres = new Set<string>()

/** Spawns a server and waits until it answers; readyMs is spawn → first answer. */
async function start (name: string, args: string[], extraEnv: Record<string, string>, probe = '/health', cwd = ROOT): Promise<Server> {
  const port = await freePort()
  const log = openSync(join(TMP, `${name}.log`), 'a')
  const started = process.hrtime.bigint()
  const child = spawn(process.execPath, args, { cwd, env: { PATH: env.PATH, ...extraEnv, PORT: String(port) }, stdio: ['ignore', log, log] })
  children.add(child)
  child.on('exit', (code, signal) => {
    children.delete(child)
    // told apart from the harness's own stops: a server that dies mid-group explains its errors
    if (!stopping.has(child)) died.push(`${name} exited (${signal ?? `code ${code}`}); see its log`)
  })
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}; see ${join(TMP, `${name}.log`)}`)
    try {
      const res = await fetch(`http://127.0.0.1:${port}${probe}`, { headers: PROTO })
      await res.arrayBuffer()
      if (res.status < 500) break
    } catch {}
    await sleep(5)
  }
  const readyMs = Number(process.hrtime.bigint() - started) / 1e6
  const url = `http://127.0.0.1:${port}`
  if (child.pid !== undefined) pidOf.set(url, child.pid)
  if (extraEnv.DATABASE_URL?.startsWith('postgres')) onPostgres.add(url)
  return { name, port, child, readyMs, url }
}

async function stop (server: Server): Promise<void> {
  if (server.child.exitCode !== null) return
  const exited = new Promise(resolve => server.child.once('exit', resolve))
  stopping.add(server.child)
  server.child.kill('SIGTERM')
  // unref'd: a pending grace period must not hold the harness open after its last server stopped
  await Promise.race([exited, sleep(15_000, undefined, { ref: false })])
  if (server.child.exitCode === null) server.child.kill('SIGKILL')
}

/** Under BENCH_CPU_PROF, Node flags for profiles in bench/.tmp/profiles/<server> (one a thread: tsx loads in a worker). */
function profile (name: string): string[] {
  return CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(ROOT, 'bench', '.tmp', 'profiles', name)}`] : []
}

/**
 * Roja with production settings and every plugin on: logging at info (one line per request, to a
 * file), metrics, rate limiting (limit raised so the one client is never 429'd; it still counts
 * every request), helmet, CORS, load shedding at its production thresholds.
 */
function startRoja (name: string, databaseUrl: string, cwd = ROOT, extraEnv: Record<string, string> = {}): Promise<Server> {
  // npm start's node flags included: a BENCH_BEFORE build runs with its own, so a change of flags is measured too
  const args = npmStartArgs(cwd)
  const entry = BUILT ? args : [...args.slice(0, -1), '--import', 'tsx', 'src/server.ts']
  return start(
    name,
    [...profile(name), ...entry],
    {
      ENVIRONMENT: 'production',
      HOST: '127.0.0.1',
      DATA_DIR: join(TMP, name),
      DATABASE_URL: databaseUrl,
      JWT_SECRET,
      TRUST_PROXY: '127.0.0.1',
      LOG_LEVEL: 'info',
      ALLOWED_CORS_ORIGINS: 'https://app.example.com',
      RATE_LIMIT_MAX: '1000000000',
      ...(env.BENCH_EVENT_LOOP_DELAY_MS ? { MAX_EVENT_LOOP_DELAY_MS: env.BENCH_EVENT_LOOP_DELAY_MS } : {}),
      ...extraEnv
    },
    '/health',
    cwd
  )
}

/** The BENCH_BEFORE commit's tree, built, in bench/.tmp/before (git archive: no worktree left behind). */
function buildBefore (rev: string): void {
  rmSync(BEFORE_DIR, { recursive: true, force: true })
  mkdirSync(BEFORE_DIR, { recursive: true })
  const archive = spawnSync('git', ['archive', '--format=tar', rev], { cwd: ROOT, maxBuffer: 1 << 30 })
  if (archive.status !== 0) throw new Error(`BENCH_BEFORE=${rev}: git archive failed: ${archive.stderr}`)
  spawnSync('tar', ['-x', '-C', BEFORE_DIR], { input: archive.stdout })
  symlinkSync(join(ROOT, 'node_modules'), join(BEFORE_DIR, 'node_modules'))
  buildIn(BEFORE_DIR)
}

/** `npm run build` in `dir`; a commit that built with tsc first has tsc's output used even with type errors. */
function buildIn (dir: string): void {
  if (existsSync(join(dir, 'tsconfig.build.json'))) {
    spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' })
  }
  // since the start-up bundle, npm start runs dist/server.js (commits before it: dist/src/server.js)
  if (existsSync(join(dir, 'scripts', 'bundle.ts'))) {
    const bundled = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bundle.ts'], { cwd: dir, stdio: 'inherit' })
    if (bundled.status !== 0) throw new Error(`bundling in ${dir} failed`)
  }
}

/** The same-SQL server (bench/baseline-fastify.ts): bare, or with `features` the like-for-like baseline. */
function startBaseline (name: string, databaseUrl: string, features = false): Promise<Server> {
  return start(
    name,
    [...(features ? profile(name) : []), '--import', 'tsx', 'bench/baseline-fastify.ts'],
    { DATABASE_URL: databaseUrl, JWT_SECRET, BASELINE_FEATURES: features ? '1' : '0' },
    '/v1/posts?limit=1'
  )
}

/** A small seeded PRNG (mulberry32): both sides of a ratio get the same sequence of requests in a round. */
function prng (seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = Math.imul(s ^ (s >>> 15), s | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
type Random = () => number
const pick = <T>(random: Random, list: T[]): T => list[Math.floor(random() * list.length)]
const between = (random: Random, lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1))

interface Req {
  path: string
  headers?: Record<string, string>
  body?: string
}

interface Target {
  name: string
  /** the servers to load; with several, the connections are split evenly and the figures added up */
  urls: string[]
  method?: string
  /** every request (randomness from the round's PRNG) */
  request: (random: Random) => Req
  connections?: number
  /** a target on a profiled server (Roja's and the like-for-like one): the only ones run under BENCH_CPU_PROF */
  profiled?: boolean
  /** a PostgreSQL database the target writes to: its lock waits are sampled while it runs */
  locksOf?: string
}

/**
 * cpuUs: the CPU time (user and system, every thread) of the server processes loaded, per request
 * answered: what a request costs the server, whatever else the machine is doing, where req/s also
 * moves with the neighbours. Node's processes only. pgCpuUs: PostgreSQL's own, every `postgres`
 * process (the backends, and the lock-wait sampler's while a write target runs), per request.
 */
interface Sample {
  reqs: number
  p50: number
  p99: number
  non2xx: number
  errors: number
  cpuUs?: number
  pgCpuUs?: number
  locks?: LockWaits
  stolen?: number
}

/** PostgreSQL's CPU milliseconds since `before` (a backend that started meanwhile counts from 0). */
function postgresCpuMsSince (before: Map<number, number>): number {
  let total = 0
  for (const [pid, ms] of cpuMsByCommand('postgres')) total += ms - (before.get(pid) ?? 0)
  return total
}

/** The CPU milliseconds used so far by the processes behind these URLs; undefined without /proc. */
function serversCpuMs (urls: string[]): number | undefined {
  let total = 0
  for (const url of urls) {
    const pid = pidOf.get(url)
    const ms = pid === undefined ? undefined : cpuMs(pid)
    if (ms === undefined) return undefined
    total += ms
  }
  return total
}

async function cannon (target: Target, duration: number, seed: number): Promise<Sample> {
  const connections = target.connections ?? CONNECTIONS
  const cpuBefore = serversCpuMs(target.urls)
  const pgBefore = target.urls.some(u => onPostgres.has(u)) ? cpuMsByCommand('postgres') : undefined
  const machineBefore = machineTicks()
  const load = () =>
    Promise.all(
      target.urls.map(async (url, i) => {
        const random = prng(seed * 31 + i)
        return autocannon({
          url,
          connections: Math.max(1, Math.round(connections / target.urls.length)),
          duration,
          method: target.method ?? 'GET',
          headers: { ...PROTO, ...(target.method === 'POST' ? { 'content-type': 'application/json' } : {}) },
          requests: [
            {
              setupRequest: req => {
                const next = target.request(random)
                return {
                  ...req,
                  path: next.path,
                  headers: { ...req.headers, ...next.headers },
                  ...(next.body !== undefined ? { body: next.body } : {})
                }
              }
            }
          ]
        })
      })
    )
  const [results, locks] = target.locksOf ? await withLockWaits(target.locksOf, load) : [await load(), undefined]
  const total = results.reduce((n, r) => n + r.requests.total, 0) || 1
  const cpuAfter = serversCpuMs(target.urls)
  const pgMs = pgBefore && pgBefore.size > 0 ? postgresCpuMsSince(pgBefore) : undefined
  const stolen = stolenShare(machineBefore, machineTicks())
  return {
    ...(cpuBefore !== undefined && cpuAfter !== undefined ? { cpuUs: ((cpuAfter - cpuBefore) * 1000) / total } : {}),
    ...(pgMs !== undefined ? { pgCpuUs: (pgMs * 1000) / total } : {}),
    ...(stolen !== undefined ? { stolen } : {}),
    reqs: results.reduce((n, r) => n + r.requests.average, 0),
    // several servers: p50 weighted by the requests each answered, p99 the worst
    p50: results.reduce((n, r) => n + r.latency.p50 * r.requests.total, 0) / total,
    p99: Math.max(...results.map(r => r.latency.p99)),
    non2xx: results.reduce((n, r) => n + r.non2xx, 0),
    errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
    ...(locks ? { locks } : {})
  }
}

const lockText = (l: Omit<LockWaits, 'samples'>) =>
  `lock waits in ${(100 * l.waitedShare).toFixed(1)} % of samples (backends: ${l.waiting.toFixed(2)} waiting, ${l.active.toFixed(1)} active)` +
  (Object.keys(l.on).length
    ? `, on ${Object.entries(l.on)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`
    : '')
/** every round's waits added up, by what was waited for */
const waitsOn = (rounds: LockWaits[]) => {
  const on: Record<string, number> = {}
  for (const r of rounds) for (const [k, v] of Object.entries(r.on)) on[k] = (on[k] ?? 0) + v
  return on
}

const percent = (share: number) => (100 * share).toFixed(1)

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

interface GroupResult {
  targets: Record<
    string,
    {
      reqs: number
      p50: number
      p99: number
      non2xx: number
      errors: number
      cpuUs?: number
      pgCpuUs?: number
      locks?: Omit<LockWaits, 'samples'>
      runs: Sample[]
    }
  >
  /** `a / b`: the median over rounds of a's req/s ÷ b's, of a's p50 ÷ b's, and of a's CPU per request ÷ b's */
  ratios: Record<string, { reqs: number; p50: number; cpu?: number; rounds: { reqs: number[]; p50: number[]; cpu?: number[] } }>
  /** the share of the machine's CPU time the hypervisor gave to other guests while the group ran (0..1) */
  stolen?: number
  error?: string
}

/**
 * Runs every target once per round, in turn (every other round in reverse), after a warm-up; each
 * ratio [a, b] is taken within a round. Under BENCH_CPU_PROF only Roja's and the like-for-like targets run, and no ratio.
 */
async function group (title: string, all: Target[], pairs: Array<[string, string]>): Promise<GroupResult> {
  const targets = CPU_PROF ? all.filter(t => t.profiled) : all
  if (WARMUP > 0) for (const target of targets) await cannon(target, WARMUP, 1000)
  const runs: Record<string, Sample[]> = Object.fromEntries(targets.map(t => [t.name, []]))
  for (let run = 0; run < RUNS; run++) {
    // Every other round in reverse: a slot's place in the round moved its figures by 5–10 % (bench/README.md, method)
    for (const target of run % 2 === 0 ? targets : [...targets].reverse()) {
      const sample = await cannon(target, DURATION, run)
      runs[target.name].push(sample)
      console.error(
        `  ${title} round ${run + 1}/${RUNS} ${target.name}: ${sample.reqs.toFixed(0)} req/s, p50 ${sample.p50.toFixed(1)} ms, p99 ${sample.p99} ms${sample.cpuUs === undefined ? '' : `, ${sample.cpuUs.toFixed(1)} µs CPU a request`}${sample.pgCpuUs === undefined ? '' : ` (PostgreSQL ${sample.pgCpuUs.toFixed(1)} µs)`}${sample.locks ? `, ${lockText(sample.locks)}` : ''}${sample.stolen === undefined ? '' : `, ${percent(sample.stolen)} % stolen`}${sample.non2xx + sample.errors ? `, ${sample.non2xx} non-2xx, ${sample.errors} errors` : ''}`
      )
    }
  }
  const result: GroupResult = { targets: {}, ratios: {} }
  for (const target of targets) {
    const samples = runs[target.name]
    result.targets[target.name] = {
      reqs: median(samples.map(s => s.reqs)),
      p50: median(samples.map(s => s.p50)),
      p99: median(samples.map(s => s.p99)),
      ...(samples.every(s => s.cpuUs !== undefined) ? { cpuUs: median(samples.map(s => s.cpuUs!)) } : {}),
      ...(samples.every(s => s.pgCpuUs !== undefined) ? { pgCpuUs: median(samples.map(s => s.pgCpuUs!)) } : {}),
      ...(samples.every(s => s.locks !== undefined)
        ? {
            locks: {
              active: median(samples.map(s => s.locks!.active)),
              waiting: median(samples.map(s => s.locks!.waiting)),
              waitedShare: median(samples.map(s => s.locks!.waitedShare)),
              on: waitsOn(samples.map(s => s.locks!))
            }
          }
        : {}),
      non2xx: samples.reduce((a, s) => a + s.non2xx, 0),
      errors: samples.reduce((a, s) => a + s.errors, 0),
      runs: samples
    }
  }
  for (const [a, b] of CPU_PROF ? [] : pairs) {
    // Each round's ratios are kept: the verdicts show how far they spread around the median.
    const rounds = {
      reqs: runs[a].map((s, i) => s.reqs / Math.max(runs[b][i].reqs, 1e-9)),
      // autocannon's latencies are whole milliseconds: a 0 ms p50 gives no ratio
      p50: runs[a].map((s, i) => (runs[b][i].p50 > 0 ? s.p50 / runs[b][i].p50 : NaN)),
      // a round whose baseline read 0 ms (a clock tick is 10 ms: the smoke's short rounds) gives no CPU ratio
      ...(runs[a].every(s => s.cpuUs !== undefined) && runs[b].every(s => (s.cpuUs ?? 0) > 0)
        ? { cpu: runs[a].map((s, i) => s.cpuUs! / runs[b][i].cpuUs!) }
        : {})
    }
    result.ratios[`${a} / ${b}`] = {
      reqs: median(rounds.reqs),
      p50: median(rounds.p50),
      ...(rounds.cpu ? { cpu: median(rounds.cpu) } : {}),
      rounds
    }
  }
  return result
}

async function request (url: string, init: RequestInit = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, { ...init, headers: { ...PROTO, ...(init.headers as Record<string, string>) } })
  return { status: res.status, text: await res.text(), headers: res.headers }
}

async function getJson (url: string, init: RequestInit = {}): Promise<any> {
  const res = await request(url, init)
  if (res.status >= 300) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${res.text}`)
  return JSON.parse(res.text)
}

/**
 * The same requests to Roja and to its baseline must answer the same status, body bytes and
 * Link/ETag/Content-Type headers: otherwise the ratio compares different work. `normalise` blanks
 * what must differ (ids and times of rows each side wrote).
 */
async function sameBytes (what: string, roja: Target, baseline: Target, samples: number, normalise = (s: string) => s): Promise<void> {
  const random = prng(12_345)
  for (let i = 0; i < samples; i++) {
    const req = roja.request(random)
    const init: RequestInit = {
      method: roja.method ?? 'GET',
      headers: { ...req.headers, ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: req.body
    }
    const a = await request(roja.urls[0] + req.path, init)
    const b = await request(baseline.urls[0] + req.path, init)
    const [ta, tb] = [normalise(a.text), normalise(b.text)]
    const at = firstDifference(ta, tb)
    const diff = [
      a.status !== b.status && `status ${a.status} vs ${b.status}`,
      ta !== tb && `body differs at character ${at}:\n    Roja:     ${excerpt(ta, at)}\n    baseline: ${excerpt(tb, at)}`,
      ...['link', 'etag', 'content-type'].map(
        h => normalise(a.headers.get(h) ?? '') !== normalise(b.headers.get(h) ?? '') && `${h}: ${a.headers.get(h)} vs ${b.headers.get(h)}`
      )
    ].filter(Boolean)
    if (a.status >= 300) diff.push(`Roja answered ${a.status}: ${a.text.slice(0, 200)}`)
    if (diff.length) throw new Error(`${what}: ${init.method} ${req.path}: Roja and the baseline answer differently: ${diff.join('; ')}`)
  }
}
const firstDifference = (a: string, b: string) => {
  let i = 0
  while (i < a.length && a[i] === b[i]) i++
  return i
}
const excerpt = (s: string, at: number) => JSON.stringify(s.slice(Math.max(0, at - 60), at + 60))
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000/g
/** Rows each side wrote (into its own copy of the database) differ only in their ids and times. */
const written = (s: string) => s.replace(UUID, '<id>').replace(TIME, '<time>')

interface Database {
  url: string
  creators: string[]
  drop: () => Promise<void>
}
/** Lock waits are PostgreSQL's to show; SQLite takes one write lock per database by design. */
const locksOf = (db: Database) => (db.url.startsWith('postgres') ? db.url : undefined)

async function pgAdmin<T> (work: (client: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: PG_URL })
  await admin.connect()
  try {
    return await work(admin)
  } finally {
    await admin.end()
  }
}
const pgUrl = (database: string) => {
  const u = new URL(PG_URL)
  u.pathname = `/${database}`
  return u.toString()
}

/** Seeds one database in a child process (bench/seed.ts), within SEED_LIMIT_S. */
async function seedDatabase (label: string, url: string, posts: number): Promise<{ creators: string[] }> {
  const started = Date.now()
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/seed.ts', url, String(posts)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
  children.add(child)
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), SEED_LIMIT_S * 1000)
  const code = await new Promise<number | null>(resolve => child.on('exit', resolve))
  clearTimeout(timer)
  children.delete(child)
  const seconds = (Date.now() - started) / 1000
  if (code !== 0) {
    throw new Error(
      seconds >= SEED_LIMIT_S
        ? `seeding ${label} (${posts} posts) took more than ${SEED_LIMIT_S} s (BENCH_SEED_TIMEOUT): the seeder has become too slow`
        : `seeding ${label} failed (exit ${code})`
    )
  }
  console.error(`  seeded ${label}: ${posts} posts in ${seconds.toFixed(1)} s (${Math.round(posts / seconds)} posts/s)`)
  return JSON.parse(out.trim().split('\n').at(-1)!)
}

/** A seeded database, kept between runs with BENCH_REUSE=1 (the small one is then copied per run: runs write into it). */
async function prepare (dialect: string, name: string, posts: number): Promise<Database> {
  const marker = join(CACHE, `${dialect}-${name}-${posts}.json`)
  let url: string
  let drop = async () => {}
  if (dialect === 'sqlite') {
    const file = REUSE ? join(CACHE, `${name}-${posts}.sqlite`) : join(TMP, `${name}.sqlite`)
    url = `sqlite:${file}`
    if (REUSE && existsSync(marker) && existsSync(file)) return { url, creators: JSON.parse(readFileSync(marker, 'utf8')).creators, drop }
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
  } else {
    // A name of this run's own (other engineers may be running the benchmark on the same server); a kept one names its size.
    const database = REUSE ? `roja_bench_${name}_${posts}` : `roja_bench_${RUN_ID}_${name}`
    url = pgUrl(database)
    const exists = await pgAdmin(async c => (await c.query('select 1 from pg_database where datname = $1', [database])).rowCount! > 0)
    if (REUSE && exists && existsSync(marker)) return { url, creators: JSON.parse(readFileSync(marker, 'utf8')).creators, drop }
    await pgAdmin(async c => {
      await c.query(`drop database if exists ${database} with (force)`)
      await c.query(`create database ${database}`)
    })
    if (!REUSE) {
      drop = () =>
        pgAdmin(async c => {
          await c.query(`drop database if exists ${database} with (force)`)
        })
    }
  }
  const { creators } = await seedDatabase(`${dialect} ${name}`, url, posts)
  if (REUSE) writeFileSync(marker, JSON.stringify({ creators }))
  return { url, creators, drop }
}

/** A copy of a seeded database (the writes and the fleet each write into their own). */
async function copy (dialect: string, from: Database, name: string): Promise<Database> {
  if (dialect === 'sqlite') {
    const file = join(TMP, `${name}.sqlite`)
    copyFileSync(from.url.slice('sqlite:'.length), file)
    return { url: `sqlite:${file}`, creators: from.creators, drop: async () => {} }
  }
  const database = `roja_bench_${RUN_ID}_${name}`
  const source = new URL(from.url).pathname.slice(1)
  await pgAdmin(c => c.query(`create database ${database} template ${source}`))
  return {
    url: pgUrl(database),
    creators: from.creators,
    drop: () =>
      pgAdmin(async c => {
        await c.query(`drop database if exists ${database} with (force)`)
      })
  }
}

/**
 * The BENCH_BEFORE server reads its own copy of the small database, from which the migrations its
 * commit does not know are struck off the record (Kysely refuses to start on unknown ones); their
 * columns and tables stay, unused by the older code.
 */
async function hideNewerMigrations (url: string): Promise<void> {
  const known = readdirSync(join(BEFORE_DIR, 'src', 'db', 'migrations')).map(f => f.replace(/\.ts$/, ''))
  const db = createDb(url)
  try {
    await db
      .deleteFrom('kysely_migration' as never)
      .where('name' as never, 'not in', known as never)
      .execute()
  } finally {
    await db.destroy()
  }
}

/**
 * The baselines' own database has Roja's tables, indexes and rows, and of Roja's triggers only
 * those of post_counter and post_schedule: their lists read the totals these keep, so their writes
 * keep them right as Roja's do. Any other trigger a later migration adds is dropped, so it shows in
 * the ratio. PostgreSQL's counter triggers are statement triggers, SQLite's row triggers.
 */
async function dropTriggers (url: string): Promise<string[]> {
  const db = createDb(url)
  const kept = (name: string) => name.startsWith('post_counter') || name.startsWith('post_schedule')
  try {
    if (url.startsWith('postgres')) {
      const { rows } = await sql<{ name: string; table: string }>`select t.tgname as name, c.relname as table
        from pg_trigger t join pg_class c on c.oid = t.tgrelid where not t.tgisinternal`.execute(db)
      const dropped = rows.filter(r => !kept(r.name))
      for (const r of dropped) await sql.raw(`drop trigger "${r.name}" on "${r.table}"`).execute(db)
      return dropped.map(r => r.name)
    }
    const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'trigger'`.execute(db)
    const dropped = rows.filter(r => !kept(r.name))
    for (const r of dropped) await sql.raw(`drop trigger "${r.name}"`).execute(db)
    return dropped.map(r => r.name)
  } finally {
    await db.destroy()
  }
}

/** What the random requests draw from: published post ids, creators, tags. */
async function sampleData (url: string, creators: string[]) {
  const db = createDb(url)
  try {
    const now = new Date().toISOString()
    const postIds = (await db.selectFrom('post').select('id').where('published_at', '<=', now).orderBy('sort_at', 'desc').limit(2000).execute()).map(
      r => r.id
    )
    const creatorIds = (await db.selectFrom('user').select('id').where('is_creator', '=', true).execute()).map(r => r.id)
    const tags = (await db.selectFrom('post_tag').select('tag').distinct().execute()).map(r => r.tag)
    return { postIds, creatorIds, tags, creators }
  } finally {
    await db.destroy()
  }
}

async function tokensFor (roja: Server, usernames: string[]): Promise<string[]> {
  return Promise.all(
    usernames.slice(0, 5).map(
      async username =>
        (
          await getJson(`${roja.url}/v1/auth/token`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ username, password: SEED_PASSWORD })
          })
        ).access_token as string
    )
  )
}

/** Runs one group; a failure (bytes that differ, a server that will not start) is reported and the run goes on. */
async function guarded (name: string, results: Record<string, unknown>, before: () => Promise<void>, work: () => Promise<unknown>): Promise<void> {
  if (!wanted(name)) return
  console.error(`-- ${name}`)
  try {
    await before()
    const ticks = machineTicks()
    const result = await work()
    // the hypervisor's share of the machine while the group ran: req/s and start-up slow with it
    const stolen = stolenShare(ticks, machineTicks())
    results[name] = stolen !== undefined && typeof result === 'object' && result !== null ? Object.assign(result, { stolen }) : result
  } catch (err) {
    const message = [(err as Error).message, ...died.splice(0)].join('; ')
    console.error(`FAILED ${name}: ${message}`)
    results[name] = { error: message }
    process.exitCode = 1
  }
}

/** POST /v1/posts: a unique slug per request (a counter), two tags, one of the creators' tokens. */
function postWriter (tokens: string[], label: string): (r: Random) => Req {
  const tag = randomBytes(3).toString('hex')
  let n = 0
  return r => {
    const i = n++
    return {
      path: '/v1/posts',
      headers: { authorization: `Bearer ${pick(r, tokens)}` },
      body: JSON.stringify({
        type: 'ARTICLE',
        title: `${label} ${tag} ${i}`,
        slug: `${label.toLowerCase()}-${tag}-${i}`,
        body: 'Written by the benchmark.',
        tags: ['bench', 'load']
      })
    }
  }
}

/** POST /v1/posts/{postId}/comments: a published post drawn from the sample, one of the creators' tokens. */
function commentWriter (tokens: string[], postIds: string[]): (r: Random) => Req {
  let n = 0
  return r => ({
    path: `/v1/posts/${pick(r, postIds)}/comments`,
    headers: { authorization: `Bearer ${pick(r, tokens)}` },
    body: JSON.stringify({ text: `Written by the benchmark, ${n++}.` })
  })
}

/**
 * Statements a create costs, from the server's query metric (every statement, begin and commit
 * included): `n` creates in turn, less what the metric counted meanwhile without them.
 */
async function statementsPerCreate (server: Server, write: (r: Random) => Req, n = 40): Promise<number> {
  const scrape = async () => {
    const { text } = await request(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    const counts = [...text.matchAll(/^roja_db_query_duration_seconds_count\{[^}]*\} (\d+)$/gm)]
    if (counts.length === 0) throw new Error(`${server.name}: GET /metrics has no roja_db_query_duration_seconds_count`)
    return counts.reduce((sum, m) => sum + Number(m[1]), 0)
  }
  const random = prng(1)
  // two scrapes apart: what a scrape itself (and the outbox's polling) adds
  const [s0, s1] = [await scrape(), await scrape()]
  for (let i = 0; i < n; i++) {
    const req = write(random)
    const res = await request(server.url + req.path, { method: 'POST', headers: { ...req.headers, 'content-type': 'application/json' }, body: req.body })
    if (res.status !== 201) throw new Error(`${server.name}: POST ${req.path} answered ${res.status}`)
  }
  return (await scrape() - s1 - (s1 - s0)) / n
}

const OFFSETS = Math.max(1, Math.min(300, Math.floor(SMALL * 0.9) - 10))

interface Databases {
  small?: Database
  large?: Database
  writes?: { roja: Database; baseline: Database; before?: Database }
  fleet?: Database
  before?: Database
}

async function benchDialect (dialect: string, dbs: Databases) {
  console.error(`\n== ${dialect}`)
  const { small, large } = dbs
  const servers: Server[] = []
  const up = async (server: Promise<Server>) => {
    const s = await server
    servers.push(s)
    return s
  }
  const down = async (...list: Server[]) => {
    for (const s of list) {
      await stop(s)
      servers.splice(servers.indexOf(s), 1)
    }
  }
  const result: Record<string, unknown> = {}
  try {
    let roja = small ? await up(startRoja(`${dialect}-roja`, small.url)) : undefined
    // A server killed from outside (a busy shared machine) costs one group, not the rest of the dialect.
    const revive = async () => {
      if (!roja || (roja.child.exitCode === null && roja.child.signalCode === null)) return
      servers.splice(servers.indexOf(roja), 1)
      roja = await up(startRoja(`${dialect}-roja`, small!.url))
    }
    const data = small ? await sampleData(small.url, small.creators) : undefined
    const tokens = roja && small ? await tokensFor(roja, small.creators) : []
    const bearer = (random: Random) => ({ authorization: `Bearer ${pick(random, tokens)}` })

    await guarded('chain', result, revive, async () => {
      // /version reads no database: once a run, on the first database (both at once in the smoke)
      if (!SMOKE && dialect !== DIALECTS.find(d => d === 'sqlite' || d === 'postgres')) {
        return {
          skipped: 'once a run, on the first ' + 'database: /version reads none'
        }
      }
      const body = join(TMP, `${dialect}-version.json`)
      const headersFile = join(TMP, `${dialect}-version-headers.json`)
      const version = await request(`${roja!.url}/version`)
      writeFileSync(body, version.text)
      // Every header Roja answers but those Node writes itself (date, connection, length, type).
      const own = [...version.headers].filter(([name]) => !['date', 'connection', 'keep-alive', 'content-length', 'content-type'].includes(name))
      writeFileSync(headersFile, JSON.stringify(Object.fromEntries(own)))
      const bare = await up(
        start(
          `${dialect}-baseline-bare-headers`,
          ['--import', 'tsx', 'bench/baseline-bare.ts'],
          { BODY_FILE: body, HEADERS_FILE: headersFile },
          '/version'
        )
      )
      const before = BEFORE ? await up(startRoja(`${dialect}-roja-before`, dbs.before!.url, BEFORE_DIR)) : undefined
      const targets: Target[] = [
        { name: 'roja /version', urls: [roja!.url], request: () => ({ path: '/version' }), profiled: true },
        { name: 'bare fastify, same headers', urls: [bare.url], request: () => ({ path: '/version' }) },
        ...(before ? [{ name: 'roja before /version', urls: [before.url], request: () => ({ path: '/version' }), profiled: true }] : [])
      ]
      try {
        await sameBytes('chain', targets[0], targets[1], 1)
        return await group('chain', targets, [
          ['roja /version', 'bare fastify, same headers'],
          ...(before ? [['roja /version', 'roja before /version'] as [string, string]] : [])
        ])
      } finally {
        await down(bare, ...(before ? [before] : []))
      }
    })

    await guarded('uncached', result, revive, async () => {
      const [base, like] = await Promise.all([
        LIMITS ? up(startBaseline(`${dialect}-baseline`, small!.url)) : undefined,
        up(startBaseline(`${dialect}-like-for-like`, small!.url, true))
      ])
      const d = data!
      // Each kind of request as both servers get it; the same PRNG sequence on both sides in a round.
      const kinds: Array<[string, (r: Random) => Req]> = [
        ['list ?offset=random', r => ({ path: `/v1/posts?limit=10&offset=${between(r, 1, OFFSETS)}` })],
        [
          'list filtered',
          r => {
            const kind = between(r, 0, 2)
            if (kind === 0) return { path: `/v1/posts?limit=10&type=${pick(r, ['ARTICLE', 'COURSE'])}&offset=${between(r, 0, OFFSETS)}` }
            if (kind === 1) { return { path: `/v1/posts?limit=10&tags=${pick(r, d.tags)}${r() < 0.3 ? `,${pick(r, d.tags)}` : ''}&offset=${between(r, 0, 30)}` } }
            return { path: `/v1/posts?limit=10&creator_id=${pick(r, d.creatorIds)}&offset=${between(r, 0, 30)}` }
          }
        ],
        ['post by id', r => ({ path: `/v1/posts/${pick(r, d.postIds)}` })],
        ['users/me/posts', r => ({ path: `/v1/users/me/posts?limit=10&offset=${between(r, 0, 30)}`, headers: bearer(r) })]
      ]
      const before = BEFORE ? await up(startRoja(`${dialect}-roja-before`, dbs.before!.url, BEFORE_DIR)) : undefined
      const targets = kinds.flatMap(([kind, request]): Target[] => [
        { name: `roja ${kind}`, urls: [roja!.url], request, profiled: true },
        { name: `like-for-like ${kind}`, urls: [like.url], request, profiled: true },
        ...(base ? [{ name: `baseline ${kind}`, urls: [base.url], request }] : []),
        ...(before ? [{ name: `roja before ${kind}`, urls: [before.url], request, profiled: true }] : [])
      ])
      const per = 2 + (base ? 1 : 0) + (before ? 1 : 0)
      try {
        for (let i = 0; i < targets.length; i += per) {
          await sameBytes(`uncached ${kinds[i / per][0]}`, targets[i], targets[i + 1], SMOKE ? 5 : 40)
          if (base) await sameBytes(`uncached ${kinds[i / per][0]}`, targets[i], targets[i + 2], SMOKE ? 5 : 40)
        }
        return await group(
          'uncached',
          targets,
          kinds.flatMap(([kind]) => [
            [`roja ${kind}`, `like-for-like ${kind}`],
            ...(base ? [[`roja ${kind}`, `baseline ${kind}`] as [string, string]] : []),
            ...(before ? [[`roja ${kind}`, `roja before ${kind}`] as [string, string]] : [])
          ])
        )
      } finally {
        await down(...(base ? [base] : []), like, ...(before ? [before] : []))
      }
    })

    await guarded('writes', result, revive, async () => {
      const [w, b, l, before] = await Promise.all([
        up(startRoja(`${dialect}-roja-writes`, dbs.writes!.roja.url, ROOT, METRICS_ENV)),
        LIMITS ? up(startBaseline(`${dialect}-baseline-writes`, dbs.writes!.baseline.url)) : undefined,
        up(startBaseline(`${dialect}-like-for-like-writes`, dbs.writes!.baseline.url, true)),
        dbs.writes!.before ? up(startRoja(`${dialect}-roja-before-writes`, dbs.writes!.before.url, BEFORE_DIR, METRICS_ENV)) : undefined
      ])
      try {
        const writers = await tokensFor(w, small!.creators)
        const beforeWriters = before ? await tokensFor(before, small!.creators) : []
        const post = postWriter(writers, 'Bench')
        const comment = commentWriter(writers, data!.postIds)
        // per kind of create: Roja's statements, and its BENCH_BEFORE build's
        const statements: Record<string, { roja: number; before?: number }> = {}
        for (const [kind, write, beforeWrite] of [
          ['POST /v1/posts', postWriter(writers, 'Counted'), postWriter(beforeWriters, 'Counted')],
          ['POST comments', commentWriter(writers, data!.postIds), commentWriter(beforeWriters, data!.postIds)]
        ] as const) {
          statements[kind] = {
            roja: await statementsPerCreate(w, write),
            ...(before ? { before: await statementsPerCreate(before, beforeWrite) } : {})
          }
          const { roja: now, before: then } = statements[kind]
          console.error(`  statements per ${kind}: roja ${now.toFixed(1)}${then === undefined ? '' : `, roja before ${then.toFixed(1)}`}`)
        }
        const kinds: Array<[string, (r: Random) => Req]> = [['', post], ['comments ', comment]]
        const targets: Target[] = kinds.flatMap(([kind, request]): Target[] => [
          { name: `roja ${kind}c${CONNECTIONS}`, urls: [w.url], method: 'POST', request, profiled: true, locksOf: locksOf(dbs.writes!.roja) },
          {
            name: `like-for-like ${kind}c${CONNECTIONS}`,
            urls: [l.url],
            method: 'POST',
            request,
            profiled: true,
            locksOf: locksOf(dbs.writes!.baseline)
          },
          ...(b ? [{ name: `baseline ${kind}c${CONNECTIONS}`, urls: [b.url], method: 'POST', request, locksOf: locksOf(dbs.writes!.baseline) }] : []),
          ...(before
            ? [{ name: `roja before ${kind}c${CONNECTIONS}`, urls: [before.url], method: 'POST', request, profiled: true, locksOf: locksOf(dbs.writes!.before!) }]
            : [])
        ])
        const per = targets.length / kinds.length
        for (let i = 0; i < targets.length; i += per) {
          for (const other of targets.slice(i + 1, i + per)) await sameBytes('writes', targets[i], other, 2, written)
        }
        const result = await group('writes', targets, kinds.flatMap(([kind]) => [
          [`roja ${kind}c${CONNECTIONS}`, `like-for-like ${kind}c${CONNECTIONS}`] as [string, string],
          ...(b ? [[`roja ${kind}c${CONNECTIONS}`, `baseline ${kind}c${CONNECTIONS}`] as [string, string]] : []),
          ...(before ? [[`roja ${kind}c${CONNECTIONS}`, `roja before ${kind}c${CONNECTIONS}`] as [string, string]] : [])
        ]))
        return Object.assign(result, { statementsPerCreate: statements })
      } finally {
        await down(w, l, ...(b ? [b] : []), ...(before ? [before] : []))
      }
    })

    await guarded('fleet', result, revive, async () => {
      if (dialect !== 'postgres') return { skipped: 'PostgreSQL only: SQLite is one file on one machine' }
      const [a, b] = await Promise.all([
        up(startRoja(`${dialect}-roja-fleet-a`, dbs.fleet!.url)),
        up(startRoja(`${dialect}-roja-fleet-b`, dbs.fleet!.url))
      ])
      try {
        const post = postWriter(await tokensFor(a, small!.creators), 'Fleet')
        return await group(
          'fleet',
          [
            { name: 'one instance', urls: [a.url], method: 'POST', request: post, profiled: true, locksOf: locksOf(dbs.fleet!) },
            { name: 'two instances', urls: [a.url, b.url], method: 'POST', request: post, profiled: true, locksOf: locksOf(dbs.fleet!) }
          ],
          [['two instances', 'one instance']]
        )
      } finally {
        await down(a, b)
      }
    })

    if (wanted('size') || wanted('cursor')) {
      const big = await up(startRoja(`${dialect}-roja-large`, large!.url))
      const randomPage = (r: Random) => ({ path: `/v1/posts?limit=10&offset=${between(r, 1, OFFSETS)}` })
      await guarded('size', result, revive, () =>
        group(
          'size',
          [
            { name: `first page at ${SMALL}`, urls: [roja!.url], request: () => ({ path: '/v1/posts?limit=10' }), profiled: true },
            { name: `first page at ${LARGE}`, urls: [big.url], request: () => ({ path: '/v1/posts?limit=10' }), profiled: true },
            // pages no first-page cache can serve, the same offsets on both
            { name: `random page at ${SMALL}`, urls: [roja!.url], request: randomPage, profiled: true },
            { name: `random page at ${LARGE}`, urls: [big.url], request: randomPage, profiled: true }
          ],
          [
            [`first page at ${LARGE}`, `first page at ${SMALL}`],
            [`random page at ${LARGE}`, `random page at ${SMALL}`]
          ]
        )
      )
      await guarded('cursor', result, revive, async () => {
        let cursor: string | null = null
        // to the end of page CURSOR_PAGE - 1 of ten, a hundred at a time: a cursor holds a position, not a page size
        for (let walked = 0; walked < (CURSOR_PAGE - 1) * 10;) {
          const limit = Math.min(100, (CURSOR_PAGE - 1) * 10 - walked)
          const got: { next_cursor: string | null } = await getJson(
            `${big.url}/v2/posts?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
          )
          cursor = got.next_cursor
          walked += limit
        }
        const deep = `/v2/posts?limit=10&cursor=${encodeURIComponent(cursor ?? '')}`
        return group(
          'cursor',
          [
            { name: 'v2 page 1', urls: [big.url], request: () => ({ path: '/v2/posts?limit=10' }), profiled: true },
            { name: `v2 page ${CURSOR_PAGE}`, urls: [big.url], request: () => ({ path: deep }), profiled: true }
          ],
          [[`v2 page ${CURSOR_PAGE}`, 'v2 page 1']]
        )
      })
      await down(big)
    }

    // Cold start: fresh processes on the (migrated) small database, nothing else running; then idle RSS.
    // With BENCH_BEFORE the old build starts in turn with the new one, on its own copy.
    await guarded('startup', result, revive, async () => {
      await down(...servers)
      type Start = { readyMs: number; idleRssMiB: number }
      const starts: Start[] = []
      const beforeStarts: Start[] = []
      const coldStart = async (name: string, url: string, into: Start[], dir?: string) => {
        const s = await startRoja(name, url, dir)
        await sleep(SMOKE ? 500 : 2000)
        into.push({ readyMs: s.readyMs, idleRssMiB: rssBytes(s.child.pid!) / 1048576 })
        await stop(s)
      }
      for (let i = 0; i < STARTS; i++) {
        await coldStart(`${dialect}-roja-cold`, small!.url, starts)
        if (BEFORE) await coldStart(`${dialect}-roja-before-cold`, dbs.before!.url, beforeStarts, BEFORE_DIR)
      }
      const summary = (list: Start[]) => ({ readyMs: median(list.map(s => s.readyMs)), idleRssMiB: median(list.map(s => s.idleRssMiB)), runs: list })
      return { ...summary(starts), ...(BEFORE ? { before: summary(beforeStarts) } : {}) }
    })
    return result
  } finally {
    for (const server of [...servers]) await stop(server)
  }
}

/** met: null when nothing could be measured (a failed group, a target that answered errors) */
interface Goal {
  goal: string
  value: string
  met: boolean | null
}

/**
 * Beside a verdict on a median: the lowest and highest of the rounds' readings, and how many of them
 * met the goal, so a median that sits among rounds on both sides of its goal reads as such.
 */
function spread (rounds: number[] | undefined, met: (v: number) => boolean, unit: string, noun = 'rounds'): string {
  const values = (rounds ?? []).filter(Number.isFinite)
  if (values.length < 2) return ''
  const digits = unit === '×' ? 2 : unit === ' MB' ? 1 : 0
  const [lo, hi] = [Math.min(...values), Math.max(...values)].map(v => v.toFixed(digits))
  return ` (${noun} ${lo}–${hi}${unit}, ${values.filter(met).length} of ${values.length} met)`
}

/** Two decimals, or three where two would round across the goal (0.997 is no 1.00 beside NOT MET). */
function shown (value: number, met: (v: number) => boolean): string {
  return met(Number(value.toFixed(2))) === met(value) ? value.toFixed(2) : value.toFixed(3)
}

/** The goals (bench/README.md) with their verdicts; none from the smoke or from fewer than 3 rounds. */
function goals (dialect: string, r: any): Goal[] {
  const out: Goal[] = []
  // A ratio over a target that answered errors, or nothing, is no measure: no verdict from it.
  const clean = (g: any) => g?.targets && Object.values(g.targets).every((s: any) => s.reqs > 0 && s.non2xx + s.errors === 0)
  const add = (goal: string, g: any, value: number | undefined, met: (v: number) => boolean, unit = '×', rounds?: number[], noun?: string) => {
    if (value === undefined) return
    if (!clean(g) && g !== r.startup) out.push({ goal, value: 'a target answered errors', met: null })
    else out.push({ goal, value: Number.isFinite(value) ? `${shown(value, met)}${unit}${spread(rounds, met, unit, noun)}` : 'n/a', met: met(value) })
  }
  /** a goal on a ratio: its median over the rounds, with the rounds' own ratios beside it */
  const addRatio = (goal: string, g: any, key: string, met: (v: number) => boolean, of: 'reqs' | 'p50' | 'cpu' = 'reqs') =>
    add(goal, g, g?.ratios?.[key]?.[of], met, '×', g?.ratios?.[key]?.rounds?.[of])
  // Against the like-for-like baseline; the bare servers (chain, same-SQL) are the limit and get no verdict.
  for (const key of Object.keys(r.uncached?.ratios ?? {}).filter(k => k.includes(' / like-for-like '))) {
    addRatio(`uncached: ${key.split(' / ')[0].slice(5)} ≥ 0.85× like-for-like`, r.uncached, key, v => v >= 0.85)
    addRatio(`uncached: ${key.split(' / ')[0].slice(5)}, CPU a request ≤ 1/0.85 of like-for-like`, r.uncached, key, v => v <= 1 / 0.85, 'cpu')
  }
  const writes = `roja c${CONNECTIONS} / like-for-like c${CONNECTIONS}`
  addRatio(`writes: POST /v1/posts at ${CONNECTIONS} connections ≥ 0.85× like-for-like`, r.writes, writes, v => v >= 0.85)
  addRatio(
    `writes: POST /v1/posts at ${CONNECTIONS} connections, CPU a request ≤ 1/0.85 of like-for-like`,
    r.writes,
    writes,
    v => v <= 1 / 0.85,
    'cpu'
  )
  const comments = `roja comments c${CONNECTIONS} / like-for-like comments c${CONNECTIONS}`
  addRatio(`writes: POST comments at ${CONNECTIONS} connections ≥ 0.85× like-for-like`, r.writes, comments, v => v >= 0.85)
  addRatio(`writes: POST comments at ${CONNECTIONS} connections, CPU a request ≤ 1/0.85 of like-for-like`, r.writes, comments, v => v <= 1 / 0.85, 'cpu')
  addRatio("fleet: two instances' writes ≥ 1.0× one instance", r.fleet, 'two instances / one instance', v => v >= 1)
  addRatio(`size: first page p50 at ${LARGE} ≤ 2× at ${SMALL}`, r.size, `first page at ${LARGE} / first page at ${SMALL}`, v => v <= 2, 'p50')
  addRatio(`size: random page p50 at ${LARGE} ≤ 2× at ${SMALL}`, r.size, `random page at ${LARGE} / random page at ${SMALL}`, v => v <= 2, 'p50')
  addRatio(`cursor: v2 page ${CURSOR_PAGE} p50 ≤ 1.5× page 1`, r.cursor, `v2 page ${CURSOR_PAGE} / v2 page 1`, v => v <= 1.5, 'p50')
  if (r.startup?.readyMs !== undefined) {
    const starts: Array<{ readyMs: number; idleRssMiB: number }> = r.startup.runs ?? []
    add(
      'startup: cold start to ready < 1000 ms',
      r.startup,
      r.startup.readyMs,
      v => v < 1000,
      ' ms',
      starts.map(s => s.readyMs),
      'starts'
    )
    add(
      'startup: idle RSS < 120 MB',
      r.startup,
      mb(r.startup.idleRssMiB),
      v => v < 120,
      ' MB',
      starts.map(s => mb(s.idleRssMiB)),
      'starts'
    )
  }
  // A group that failed outright has no ratio; say so rather than leave its goals out.
  for (const name of ['chain', 'uncached', 'writes', 'fleet', 'size', 'cursor', 'startup']) {
    if (r[name]?.error) out.push({ goal: `${name}: its goals`, value: 'the group failed', met: null })
  }
  return out
}

const VERDICTS = !SMOKE && !CPU_PROF && RUNS >= 3
/** MiB as MB of 10^6 bytes, the stricter reading of the memory goal */
const mb = (mib: number) => mib * 1.048576

/** A group's stolen share above which the run says so beside its verdicts. */
const STOLEN_WARN = 0.05

function table (dialect: string, r: any): string {
  const lines = [`\n${dialect}: medians of ${RUNS} round(s) × ${DURATION} s, ${CONNECTIONS} connections unless named`]
  const row = (cells: string[]) => lines.push(cells.map((c, i) => (i === 0 ? c.padEnd(34) : c.padStart(i >= 5 ? 12 : 9))).join(''))
  row(['target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'cpu µs/req', 'pg µs/req'])
  for (const [name, g] of Object.entries(r) as Array<[string, any]>) {
    if (g.error) {
      lines.push(`-- ${name}: FAILED: ${g.error}`)
      continue
    }
    if (g.skipped) {
      lines.push(`-- ${name}: skipped (${g.skipped})`)
      continue
    }
    if (!g.targets) continue
    lines.push(`-- ${name}`)
    for (const [target, s] of Object.entries(g.targets) as Array<[string, any]>) {
      row([
        target,
        s.reqs.toFixed(0),
        s.p50.toFixed(1),
        String(s.p99),
        String(s.non2xx + s.errors),
        s.cpuUs === undefined ? '-' : s.cpuUs.toFixed(1),
        s.pgCpuUs === undefined ? '-' : s.pgCpuUs.toFixed(1)
      ])
    }
    for (const [target, s] of Object.entries(g.targets) as Array<[string, any]>) if (s.locks) lines.push(`   ${target}: ${lockText(s.locks)}`)
    for (const [kind, { roja, before }] of Object.entries(g.statementsPerCreate ?? {}) as Array<[string, { roja: number; before?: number }]>) {
      lines.push(`   statements per ${kind}: roja ${roja.toFixed(1)}${before === undefined ? '' : `, roja before ${before.toFixed(1)}`}`)
    }
    for (const [key, v] of Object.entries(g.ratios) as Array<[string, any]>) {
      lines.push(
        `   ratio ${key}: req/s ${v.reqs.toFixed(2)}×, p50 ${Number.isFinite(v.p50) ? `${v.p50.toFixed(2)}×` : 'n/a'}${v.cpu === undefined ? '' : `, cpu/req ${v.cpu.toFixed(2)}×`}`
      )
    }
    if (g.stolen !== undefined) lines.push(`   stolen by the hypervisor while it ran: ${percent(g.stolen)} % of the machine's CPU time`)
  }
  if (r.startup?.readyMs !== undefined) {
    lines.push(
      `-- startup: ready in ${r.startup.readyMs.toFixed(0)} ms, idle RSS ${r.startup.idleRssMiB.toFixed(1)} MiB (${mb(r.startup.idleRssMiB).toFixed(1)} MB)`
    )
  }
  if (r.startup?.before) {
    lines.push(
      `-- startup, roja before: ready in ${r.startup.before.readyMs.toFixed(0)} ms, idle RSS ${r.startup.before.idleRssMiB.toFixed(1)} MiB (same rounds, started in turn)`
    )
  }
  if (r.startup?.stolen !== undefined) { lines.push(`   stolen by the hypervisor during the starts: ${percent(r.startup.stolen)} % of the machine's CPU time`) }
  if (VERDICTS) { for (const g of goals(dialect, r)) lines.push(`${g.met === null ? 'NO VERDICT' : g.met ? 'MET    ' : 'NOT MET'} ${g.goal}: ${g.value}`) } else { lines.push(`(no verdicts: ${SMOKE ? 'the smoke measures nothing properly' : CPU_PROF ? 'profiling run' : `${RUNS} round(s), verdicts need ≥ 3`})`) }
  // Shared hosts: a group the hypervisor took time from measured the neighbours too (CPU a request excepted)
  const robbed = Object.entries(r).filter(([, g]: [string, any]) => (g?.stolen ?? 0) > STOLEN_WARN)
  if (robbed.length > 0) {
    lines.push(
      `WARNING more than ${percent(STOLEN_WARN)} % of the machine's CPU time was stolen by the hypervisor during ${robbed.map(([name, g]: [string, any]) => `${name} (${percent(g.stolen)} %)`).join(', ')}: their req/s, latencies and start-up are the host's as much as Roja's; CPU a request is not`
    )
  }
  return lines.join('\n')
}

async function main () {
  mkdirSync(TMP, { recursive: true })
  mkdirSync(CACHE, { recursive: true })
  console.error(`groups: ${GROUPS.join(', ')}`)
  if (BUILT && env.BENCH_BUILD !== 'dist') {
    // npm start's own build: the bundle
    console.error('building (npm run prestart)')
    if (spawnSync('npm', ['run', '--silent', 'prestart'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) {
      throw new Error('the build (npm run prestart) failed')
    }
  }
  if (BEFORE) {
    console.error(`building Roja at ${BEFORE} in ${BEFORE_DIR}`)
    buildBefore(BEFORE)
  }
  const started = Date.now()
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadavgAtStart: loadavg(),
    groups: GROUPS,
    runs: RUNS,
    durationS: DURATION,
    connections: CONNECTIONS,
    small: SMALL,
    large: LARGE,
    cursorPage: CURSOR_PAGE,
    smoke: SMOKE,
    built: BUILT,
    before: BEFORE
  }
  const dialects: string[] = []
  for (const dialect of DIALECTS) {
    if (dialect === 'postgres') {
      try {
        await pgAdmin(async () => {})
      } catch (err) {
        console.error(`PostgreSQL at ${PG_URL} is not reachable (${(err as Error).message}): skipped`)
        continue
      }
    }
    dialects.push(dialect)
  }
  // Every database is seeded up front and at once (one process each): the slow 1 M seeds overlap.
  const needsSmall = GROUPS.some(g => g !== 'cursor')
  const needsLarge = wanted('size') || wanted('cursor')
  console.error('seeding')
  const prepared = await Promise.all(
    dialects.map(async (d): Promise<Databases> => {
      const [kept, large] = await Promise.all([
        needsSmall ? prepare(d, 'small', SMALL) : undefined,
        needsLarge ? prepare(d, 'large', LARGE) : undefined
      ])
      const small = kept && REUSE ? await copy(d, kept, 'small') : kept
      // Copies now, while nothing is connected (PostgreSQL copies only an idle template).
      const writes = wanted('writes')
        ? {
            roja: await copy(d, small!, 'writes_roja'),
            baseline: await copy(d, small!, 'writes_base'),
            before: BEFORE ? await copy(d, small!, 'writes_before') : undefined
          }
        : undefined
      if (writes) await dropTriggers(writes.baseline.url)
      if (writes?.before) await hideNewerMigrations(writes.before.url)
      const fleet = wanted('fleet') && d === 'postgres' ? await copy(d, small!, 'fleet') : undefined
      const before = BEFORE && small ? await copy(d, small, 'before') : undefined
      if (before) await hideNewerMigrations(before.url)
      return { small, large, writes, fleet, before }
    })
  )
  const results: Record<string, any> = {}
  try {
    if (SMOKE) {
      // The smoke measures nothing, so both dialects run at once: CI waits half as long for its server starts.
      const all = await Promise.all(dialects.map((dialect, i) => benchDialect(dialect, prepared[i])))
      for (const [i, dialect] of dialects.entries()) {
        results[dialect] = all[i]
        console.log(table(dialect, all[i]))
      }
    } else {
      for (const [i, dialect] of dialects.entries()) {
        results[dialect] = await benchDialect(dialect, prepared[i])
        console.log(table(dialect, results[dialect]))
      }
    }
  } finally {
    for (const { small, large, writes, fleet, before } of prepared) {
      for (const db of [small, large, writes?.roja, writes?.baseline, writes?.before, fleet, before]) await db?.drop()
    }
  }
  const out = {
    meta: { ...meta, loadavgAtEnd: loadavg(), seconds: (Date.now() - started) / 1000 },
    results,
    goals: VERDICTS ? Object.fromEntries(Object.entries(results).map(([d, r]) => [d, goals(d, r)])) : 'none: see meta'
  }
  // Results stay out of git: a full run writes results.json, a selection, the smoke or a profile its own name.
  const full = !SMOKE && !CPU_PROF && GOAL_GROUPS.every(wanted)
  const file = join(ROOT, 'bench', '.tmp', full ? 'results.json' : `results-${SMOKE ? 'smoke' : GROUPS.join('-')}.json`)
  writeFileSync(file, JSON.stringify(out, null, 2) + '\n')
  console.error(`\n${(out.meta.seconds / 60).toFixed(1)} min; results in ${file}`)
  rmSync(TMP, { recursive: true, force: true })
  // Every target must have answered, and only with 2xx (a 429 or 503 would make the figures meaningless).
  const bad = Object.values(results).some((r: any) =>
    Object.values(r).some((g: any) => g.targets && Object.values(g.targets).some((s: any) => s.reqs === 0 || s.non2xx > 0 || s.errors > 0))
  )
  if (bad) {
    console.error('a target answered nothing, or not only 2xx: see the table')
    process.exitCode = 1
  }
}

const cleanup = () => {
  for (const child of children) child.kill('SIGKILL')
}
process.on('SIGINT', () => {
  cleanup()
  process.exit(130)
})
try {
  await main()
} finally {
  cleanup()
}
