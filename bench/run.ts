/**
 * The benchmark (`npm run bench`; never part of npm test). Starts Roja as a child process with
 * production settings on seeded databases and measures each figure beside its baselines in the
 * same run, target after target within every run, so a busy machine slows all of them alike:
 *
 *   list      GET /v1/posts?limit=10  vs  bare node:http (same bytes)  vs  minimal Fastify (same SQL)
 *   auth      GET /v1/profiles/me (JWT + user lookup)  vs  GET /v1/profiles/{profileId}
 *   size      the first list page at BENCH_SMALL posts  vs  at BENCH_LARGE posts (two servers)
 *   cursor    GET /v2/posts page 1000  vs  page 1 (on the large database)
 *   writes    POST /v1/posts, sustained
 *   startup   cold start to ready and idle RSS (median of 3 starts)
 *
 * On SQLite and on PostgreSQL (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres;
 * the databases roja_bench and roja_bench_large are made and dropped). Prints a table and writes
 * bench/results.json. Settings (env): BENCH_RUNS=3, BENCH_DURATION=5 (s), BENCH_CONNECTIONS=50,
 * BENCH_SMALL=10000, BENCH_LARGE=1000000, BENCH_DIALECTS=sqlite,postgres, BENCH_SMOKE=1 (tiny data,
 * 1 s runs: CI), BENCH_CPU_PROF=1 (the list server writes a .cpuprofile to bench/.tmp/profiles),
 * BENCH_REUSE=1 (keep and reuse the large databases), BENCH_EVENT_LOOP_DELAY_MS (load shedding).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
// @ts-expect-error autocannon ships no types; the part used here is typed below
import autocannonUntyped from 'autocannon'
import { sql } from 'kysely'
import pg from 'pg'
import { createDb } from '../src/db/dialect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { seed, SEED_PASSWORD } from '../scripts/seed.js'
import { freePort, rssBytes } from '../scripts/proc.js'

interface Result {
  requests: { average: number }
  latency: { p50: number, p99: number }
  errors: number
  timeouts: number
  non2xx: number
}
interface CannonRequest { method?: string, path?: string, headers?: Record<string, string>, body?: string }
const autocannon = autocannonUntyped as (opts: {
  url: string, connections: number, duration: number, method: string, headers: Record<string, string>,
  requests?: Array<{ setupRequest: (req: CannonRequest) => CannonRequest }>
}) => Promise<Result>

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const env = process.env
const SMOKE = env.BENCH_SMOKE === '1'
const num = (name: string, normal: number, smoke: number) => Number(env[name] ?? (SMOKE ? smoke : normal))
const RUNS = num('BENCH_RUNS', 3, 1)
const DURATION = num('BENCH_DURATION', 5, 1)
const WARMUP = num('BENCH_WARMUP', 2, 0.5)
const CONNECTIONS = num('BENCH_CONNECTIONS', 50, 10)
const SMALL = num('BENCH_SMALL', 10_000, 200)
const LARGE = num('BENCH_LARGE', 1_000_000, 2_000)
const CURSOR_PAGE = Math.min(1000, Math.floor(LARGE * 0.9 / 10))
const DIALECTS = (env.BENCH_DIALECTS ?? 'sqlite,postgres').split(',')
const PG_URL = env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CPU_PROF = env.BENCH_CPU_PROF === '1'
const REUSE = env.BENCH_REUSE === '1'
const ONLY = env.BENCH_ONLY?.split(',') // some groups only (list,auth,size,cursor,writes,startup)
const wanted = (name: string) => !ONLY || ONLY.includes(name)
// Built JavaScript like `npm start`; the smoke runs the TypeScript through tsx (no build step in CI's two minutes).
// BENCH_BUILD=dist: the existing dist/ as it is (repeated runs).
const BUILT = env.BENCH_BUILD ? env.BENCH_BUILD !== '0' : !SMOKE
const TMP = join(ROOT, 'bench', '.tmp', `run-${randomBytes(3).toString('hex')}`)
const CACHE = join(ROOT, 'bench', '.tmp', 'cache')
const JWT_SECRET = randomBytes(48).toString('base64url')
const PROTO = { 'x-forwarded-proto': 'https' }
const children = new Set<ChildProcess>()



interface Server { name: string, port: number, child: ChildProcess, readyMs: number, url: string }

/** Spawns a server and waits until it answers; readyMs is spawn → first answer. */
async function start (name: string, args: string[], extraEnv: Record<string, string>, probe = '/health'): Promise<Server> {
  const port = await freePort()
  const log = openSync(join(TMP, `${name}.log`), 'a')
  const started = process.hrtime.bigint()
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { PATH: env.PATH, ...extraEnv, PORT: String(port) }, stdio: ['ignore', log, log] })
  children.add(child)
  child.on('exit', () => children.delete(child))
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}; see ${join(TMP, `${name}.log`)}`)
    try {
      const res = await fetch(`http://127.0.0.1:${port}${probe}`, { headers: PROTO })
      await res.arrayBuffer()
      if (res.ok) break
    } catch {}
    await sleep(5)
  }
  const readyMs = Number(process.hrtime.bigint() - started) / 1e6
  return { name, port, child, readyMs, url: `http://127.0.0.1:${port}` }
}

async function stop (server: Server): Promise<void> {
  if (server.child.exitCode !== null) return
  const exited = new Promise(resolve => server.child.once('exit', resolve))
  server.child.kill('SIGTERM')
  await Promise.race([exited, sleep(15_000)])
  if (server.child.exitCode === null) server.child.kill('SIGKILL')
}

// npm start's own command line (package.json), node flags included: the benchmark runs what production runs.
const START_ARGS = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string).split(' ').slice(1)

/** Roja with production settings: logging on (to a file), metrics, rate limits, security headers. */
function startRoja (name: string, databaseUrl: string, profile = false): Promise<Server> {
  const entry = BUILT ? START_ARGS : [...START_ARGS.slice(0, -1), '--import', 'tsx', 'src/server.ts']
  const prof = profile ? ['--cpu-prof', `--cpu-prof-dir=${join(ROOT, 'bench', '.tmp', 'profiles')}`] : []
  return start(name, [...prof, ...entry], {
    ENVIRONMENT: 'production',
    HOST: '127.0.0.1',
    DATA_DIR: join(TMP, name),
    DATABASE_URL: databaseUrl,
    JWT_SECRET,
    TRUST_PROXY: 'true',
    LOG_LEVEL: 'info',
    // high enough that the benchmark's one client is never 429'd; the limiter still counts every request
    RATE_LIMIT_MAX: '1000000000',
    ...(env.BENCH_EVENT_LOOP_DELAY_MS ? { MAX_EVENT_LOOP_DELAY_MS: env.BENCH_EVENT_LOOP_DELAY_MS } : {})
  })
}

interface Target {
  name: string
  url: string
  method?: string
  headers?: Record<string, string>
  /** a fresh body per request (writes) */
  body?: () => string
}

interface Sample { reqs: number, p50: number, p99: number, non2xx: number, errors: number }

async function cannon (target: Target, duration: number): Promise<Sample> {
  const headers = { ...PROTO, ...target.headers, ...(target.body ? { 'content-type': 'application/json' } : {}) }
  const result: Result = await autocannon({
    url: target.url,
    connections: CONNECTIONS,
    duration,
    method: target.method ?? 'GET',
    headers,
    requests: target.body ? [{ setupRequest: (req) => ({ ...req, body: target.body!() }) }] : undefined
  })
  return { reqs: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors + result.timeouts }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

interface GroupResult {
  targets: Record<string, { reqs: number, p50: number, p99: number, non2xx: number, errors: number, runs: Sample[] }>
  /** per run, then the median: ratio of req/s (and of p50) of each target to the group's reference */
  ratios: Record<string, { reqs: number, p50: number }>
}

/** Runs every target once per run, in turn, after a warm-up; ratios are taken within each run. */
async function group (title: string, targets: Target[], reference = targets[0].name): Promise<GroupResult> {
  for (const target of targets) await cannon(target, WARMUP)
  const runs: Record<string, Sample[]> = Object.fromEntries(targets.map(t => [t.name, []]))
  for (let run = 0; run < RUNS; run++) {
    for (const target of targets) {
      const sample = await cannon(target, DURATION)
      runs[target.name].push(sample)
      console.error(`  ${title} run ${run + 1}/${RUNS} ${target.name}: ${sample.reqs.toFixed(0)} req/s, p50 ${sample.p50} ms, p99 ${sample.p99} ms${sample.non2xx ? `, ${sample.non2xx} non-2xx` : ''}`)
    }
  }
  const result: GroupResult = { targets: {}, ratios: {} }
  for (const target of targets) {
    const samples = runs[target.name]
    result.targets[target.name] = {
      reqs: median(samples.map(s => s.reqs)), p50: median(samples.map(s => s.p50)), p99: median(samples.map(s => s.p99)),
      non2xx: samples.reduce((a, s) => a + s.non2xx, 0), errors: samples.reduce((a, s) => a + s.errors, 0), runs: samples
    }
    if (target.name !== reference) {
      result.ratios[`${target.name} / ${reference}`] = {
        reqs: median(samples.map((s, i) => s.reqs / runs[reference][i].reqs)),
        p50: median(samples.map((s, i) => s.p50 / Math.max(runs[reference][i].p50, 0.001)))
      }
    }
  }
  return result
}

async function getJson (url: string, init: RequestInit = {}): Promise<any> {
  const res = await fetch(url, { ...init, headers: { ...PROTO, ...(init.headers as Record<string, string>) } })
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`)
  return res.json()
}

/** A seeded database; the large one may be kept between runs (BENCH_REUSE=1). */
async function prepare (dialect: string, name: string, posts: number): Promise<{ url: string, creator: string, drop: () => Promise<void> }> {
  let url: string
  let drop = async () => {}
  const marker = join(CACHE, `${dialect}-${name}-${posts}.json`)
  const reuse = REUSE && name === 'large'
  if (dialect === 'sqlite') {
    const file = reuse ? join(CACHE, `large-${posts}.sqlite`) : join(TMP, `${name}.sqlite`)
    url = `sqlite:${file}`
  } else {
    const database = `roja_bench${name === 'large' ? '_large' : ''}`
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    const exists = (await admin.query('select 1 from pg_database where datname = $1', [database])).rowCount! > 0
    if (!(reuse && exists && existsSync(marker))) {
      await admin.query(`drop database if exists ${database} with (force)`)
      await admin.query(`create database ${database}`)
    }
    await admin.end()
    const target = new URL(PG_URL)
    target.pathname = `/${database}`
    url = target.toString()
    if (!reuse) {
      drop = async () => {
        const c = new pg.Client({ connectionString: PG_URL })
        await c.connect()
        await c.query(`drop database if exists ${database} with (force)`)
        await c.end()
      }
    }
  }
  if (reuse && existsSync(marker)) return { url, creator: JSON.parse(readFileSync(marker, 'utf8')).creator, drop }
  const db = createDb(url)
  try {
    await migrateToLatest(db)
    const started = Date.now()
    console.error(`seeding ${dialect} ${name}: ${posts} posts`)
    const result = await seed(db, { posts, quiet: SMOKE || !process.stderr.isTTY })
    // as autovacuum would have by now: statistics, and a visibility map for index-only counts
    if (dialect === 'postgres') await sql`vacuum analyze`.execute(db)
    console.error(`  seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    if (reuse) writeFileSync(marker, JSON.stringify({ creator: result.creatorUsernames[0] }))
    return { url, creator: result.creatorUsernames[0], drop }
  } finally {
    await db.destroy()
  }
}

async function benchDialect (dialect: string) {
  console.error(`\n== ${dialect}`)
  if (env.BENCH_PREPARE_ONLY === '1') { await prepare(dialect, 'large', LARGE); return {} } // seed the cache (with BENCH_REUSE=1)
  const small = await prepare(dialect, 'small', SMALL)
  const large = await prepare(dialect, 'large', LARGE)
  const servers: Server[] = []
  try {
    const [roja, rojaLarge, fastifyBaseline] = await Promise.all([
      startRoja('roja-small', small.url, CPU_PROF),
      startRoja('roja-large', large.url),
      start('baseline-fastify', ['--import', 'tsx', 'bench/baseline-fastify.ts'], { DATABASE_URL: small.url }, '/v1/posts?limit=1')
    ])
    servers.push(roja, rojaLarge, fastifyBaseline)

    const listPath = '/v1/posts?limit=10'
    const rojaBody = await (await fetch(roja.url + listPath, { headers: PROTO })).text()
    const baselineBody = await (await fetch(fastifyBaseline.url + listPath)).text()
    if (rojaBody !== baselineBody) console.error('  warning: the Fastify baseline\'s bytes differ from Roja\'s')
    const bodyFile = join(TMP, 'list-body.json')
    writeFileSync(bodyFile, rojaBody)
    const httpBaseline = await start('baseline-http', ['--import', 'tsx', 'bench/baseline-http.ts'], { BODY_FILE: bodyFile }, '/')
    servers.push(httpBaseline)

    const token = (await getJson(`${roja.url}/v1/auth/token`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: small.creator, password: SEED_PASSWORD })
    })).access_token as string
    const auth = { authorization: `Bearer ${token}` }
    const me = await getJson(`${roja.url}/v1/profiles/me`, { headers: auth })

    let cursor: string | null = null
    for (let page = 1; page < CURSOR_PAGE; page++) {
      const got: { next_cursor: string | null } = await getJson(`${rojaLarge.url}/v2/posts?limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      cursor = got.next_cursor
    }

    const result: Record<string, unknown> = {}
    // Profiling: Roja alone, so the profile is not mostly the idle time of the baselines' turns.
    if (CPU_PROF) return { list: await group('list', [{ name: 'roja', url: roja.url + listPath }]) }
    if (wanted('list')) result.list = await group('list', [
      { name: 'roja', url: roja.url + listPath },
      { name: 'fastify-baseline', url: fastifyBaseline.url + listPath },
      { name: 'node-http', url: httpBaseline.url + listPath },
      // Not goals, for reading the figures: page 2 is never cached (both queries every time), and
      // /version is the production plugin chain with no database and a tiny body: Roja's ceiling.
      { name: 'roja page 2 (uncached)', url: `${roja.url}${listPath}&offset=10` },
      { name: 'roja /version', url: `${roja.url}/version` }
    ])
    if (wanted('auth')) result.auth = await group('auth', [
      { name: 'public profile', url: `${roja.url}/v1/profiles/${me.id as string}` },
      { name: 'profiles/me', url: `${roja.url}/v1/profiles/me`, headers: auth }
    ])
    if (wanted('size')) result.size = await group('size', [
      { name: `list at ${SMALL}`, url: roja.url + listPath },
      { name: `list at ${LARGE}`, url: rojaLarge.url + listPath },
      // the same without the first-page cache: page 2 runs the page query and the total every time
      { name: `page 2 at ${SMALL} (uncached)`, url: `${roja.url}${listPath}&offset=10` },
      { name: `page 2 at ${LARGE} (uncached)`, url: `${rojaLarge.url}${listPath}&offset=10` }
    ])
    if (wanted('cursor')) result.cursor = await group('cursor', [
      { name: 'v2 page 1', url: `${rojaLarge.url}/v2/posts?limit=10` },
      { name: `v2 page ${CURSOR_PAGE}`, url: `${rojaLarge.url}/v2/posts?limit=10&cursor=${encodeURIComponent(cursor ?? '')}` }
    ])
    let n = 0
    const tag = randomBytes(3).toString('hex')
    if (wanted('writes')) result.writes = await group('writes', [{
      name: 'POST /v1/posts', url: `${roja.url}/v1/posts`, method: 'POST', headers: auth,
      body: () => JSON.stringify({ title: `Bench ${tag} ${n++}`, type: 'ARTICLE', body: 'Written by the benchmark.', tags: ['bench', 'load'] })
    }])

    // Cold start: a fresh process on the (migrated) small database, to the first answer; then idle RSS.
    if (!wanted('startup')) return result
    await stop(roja)
    const starts: Array<{ readyMs: number, idleRssMiB: number }> = []
    for (let i = 0; i < (SMOKE ? 1 : 3); i++) {
      const s = await startRoja('roja-cold', small.url)
      await sleep(SMOKE ? 500 : 2000)
      starts.push({ readyMs: s.readyMs, idleRssMiB: rssBytes(s.child.pid!) / 1048576 })
      await stop(s)
    }
    result.startup = { readyMs: median(starts.map(s => s.readyMs)), idleRssMiB: median(starts.map(s => s.idleRssMiB)), runs: starts }
    return result
  } finally {
    for (const server of servers) await stop(server)
    await small.drop()
    await large.drop()
  }
}

interface Goal { goal: string, value: string, met: boolean }

function goals (r: any): Goal[] {
  const out: Goal[] = []
  const add = (goal: string, value: number, met: boolean, unit = '×') => out.push({ goal, value: `${value.toFixed(2)}${unit}`, met })
  if (r.list?.ratios['fastify-baseline / roja']) {
    const fb = r.list.ratios['fastify-baseline / roja'].reqs
    const http = r.list.ratios['node-http / roja'].reqs
    add('list req/s ≥ 1.0× minimal Fastify', 1 / fb, 1 / fb >= 1)
    add('list req/s ≥ 0.25× node:http', 1 / http, 1 / http >= 0.25)
  }
  if (r.auth) add('profiles/me req/s ≥ 0.8× public profile', r.auth.ratios['profiles/me / public profile'].reqs, r.auth.ratios['profiles/me / public profile'].reqs >= 0.8)
  if (r.size) {
    const [cached, small, large] = Object.keys(r.size.ratios)
    add(`list p50 ${cached} ≤ 2×`, r.size.ratios[cached].p50, r.size.ratios[cached].p50 <= 2)
    // each uncached page against the same run's reference, so their quotient is a same-run ratio too
    if (large) {
      const uncached = r.size.ratios[large].p50 / r.size.ratios[small].p50
      add('uncached page 2 p50 at large ÷ small ≤ 2×', uncached, uncached <= 2)
    }
  }
  if (r.cursor) { const k = Object.keys(r.cursor.ratios)[0]; add(`${k} p50 ≤ 1.5×`, r.cursor.ratios[k].p50, r.cursor.ratios[k].p50 <= 1.5) }
  if (r.startup) {
    add('cold start to ready < 1000 ms', r.startup.readyMs, r.startup.readyMs < 1000, ' ms')
    const mb = r.startup.idleRssMiB * 1.048576 // the goal is in MB (10^6 bytes): the stricter reading
    add('idle RSS < 120 MB', mb, mb < 120, ' MB')
  }
  return out
}

function table (dialect: string, r: any): string {
  const lines = [`\n${dialect}: medians of ${RUNS} run(s) × ${DURATION} s, ${CONNECTIONS} connections`]
  const row = (cells: string[]) => lines.push(cells.map((c, i) => (i === 0 ? c.padEnd(26) : i === 5 ? `  ${c}` : c.padStart(10))).join(''))
  row(['target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'ratio'])
  for (const [name, g] of Object.entries(r) as Array<[string, any]>) {
    if (!g.targets) continue
    lines.push(`-- ${name}`)
    const ref = Object.keys(g.targets)[0]
    for (const [target, s] of Object.entries(g.targets) as Array<[string, any]>) {
      const ratio = g.ratios[`${target} / ${ref}`]
      row([target, s.reqs.toFixed(0), String(s.p50), String(s.p99), String(s.non2xx + s.errors), ratio ? `${ratio.reqs.toFixed(2)}× (p50 ${ratio.p50.toFixed(2)}×)` : 'reference'])
    }
  }
  if (r.startup) lines.push(`-- startup: ready in ${r.startup.readyMs.toFixed(0)} ms, idle RSS ${r.startup.idleRssMiB.toFixed(1)} MiB (${(r.startup.idleRssMiB * 1.048576).toFixed(1)} MB)`)
  for (const g of goals(r)) lines.push(`${g.met ? 'MET    ' : 'NOT MET'} ${g.goal}: ${g.value}`)
  return lines.join('\n')
}

async function main () {
  mkdirSync(TMP, { recursive: true })
  mkdirSync(CACHE, { recursive: true })
  if (BUILT && env.BENCH_BUILD !== 'dist') {
    console.error('building (tsc -p tsconfig.build.json)')
    // tsc still writes the output when another file has type errors; the run only needs it to exist.
    spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' })
  }
  const started = Date.now()
  const results: Record<string, any> = {}
  const meta = {
    date: new Date().toISOString(), node: process.version, cpus: cpus().length, loadavgAtStart: loadavg(),
    runs: RUNS, durationS: DURATION, connections: CONNECTIONS, small: SMALL, large: LARGE, cursorPage: CURSOR_PAGE, smoke: SMOKE, built: BUILT
  }
  for (const dialect of DIALECTS) {
    if (dialect === 'postgres') {
      const probe = new pg.Client({ connectionString: PG_URL })
      try { await probe.connect(); await probe.end() } catch (err) {
        console.error(`PostgreSQL at ${PG_URL} is not reachable (${(err as Error).message}): skipped`)
        continue
      }
    }
    results[dialect] = await benchDialect(dialect)
    console.log(table(dialect, results[dialect]))
  }
  const out = { meta: { ...meta, loadavgAtEnd: loadavg(), seconds: (Date.now() - started) / 1000 }, results, goals: Object.fromEntries(Object.entries(results).map(([d, r]) => [d, goals(r)])) }
  // The smoke's tiny figures must not replace the real ones.
  writeFileSync(join(ROOT, 'bench', SMOKE ? '.tmp/results-smoke.json' : 'results.json'), JSON.stringify(out, null, 2) + '\n')
  rmSync(TMP, { recursive: true, force: true })
  // Every target must have answered, and only with 2xx (a 429 or 503 would make the figures meaningless).
  const bad = Object.values(results).some((r: any) => Object.values(r).some((g: any) => g.targets &&
    Object.values(g.targets).some((s: any) => s.reqs === 0 || s.non2xx > 0 || s.errors > 0)))
  if (bad) { console.error('a target answered nothing, or not only 2xx: see the table'); process.exitCode = 1 }
}

const cleanup = () => { for (const child of children) child.kill('SIGKILL') }
process.on('SIGINT', () => { cleanup(); process.exit(130) })
try {
  await main()
} finally {
  cleanup()
}
