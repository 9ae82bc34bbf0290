import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort, npmStartArgs, request } from '../proc.js'
import { startHAProxy, type HAProxy } from './haproxy.js'
import { privatePostgres, type PrivatePostgres } from './postgres.js'

/**
 * A Roja fleet on one machine: N instances on one PostgreSQL and one Redis, HAProxy in front.
 * What the instances share is what a real fleet must share: the database, Redis (rate limits),
 * the JWT secret and the media folder (DATA_DIR). Each has its own port, process and memory.
 */

const ROOT = resolve(import.meta.dirname, '../..')
const PROBLEM_BASE_URI = 'https://roja.dev/problems'

export type Runtime = 'dist' | 'tsx'

export interface FleetOptions {
  /** how many Roja instances (default 3) */
  instances?: number
  /** `dist`: the built server, as `npm start` runs it (build first); `tsx`: the TypeScript sources */
  runtime?: Runtime
  /** the balancer's port (default: a free one) */
  port?: number
  /** a PostgreSQL to use; without one the fleet starts a private throw-away cluster */
  databaseUrl?: string
  redisUrl: string
  smtpUrl?: string
  /** what the instances run, when not this working tree (scripts/fleet/upgrade.ts: a git revision's sources) */
  build?: Build
  /** further settings given to every instance (RATE_LIMIT_MAX …) */
  env?: Record<string, string>
  logLevel?: string
  /** where to write the Prometheus targets file (default: prometheus-targets.json in the fleet's folder) */
  targetsFile?: string
}

// Children still running when this process exits (it crashed, or a test failed hard) are killed.
const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL')
})

/** What an instance runs: node's arguments, in a folder of sources (this working tree, or a revision's). */
export interface Build {
  name: string
  cwd: string
  command: string[]
}

export class Instance {
  child?: ChildProcess
  exit?: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  log: string[] = []
  build: Build
  /** `build`: what it runs, or node's arguments to run in this working tree */
  constructor (
    readonly name: string,
    readonly port: number,
    build: Build | string[],
    private readonly env: Record<string, string>
  ) {
    this.build = Array.isArray(build) ? { name: 'working tree', cwd: ROOT, command: build } : build
  }

  get url () {
    return `http://127.0.0.1:${this.port}`
  }

  get pid () {
    return this.child?.pid
  }

  get running () {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
  }

  async start (timeoutMs = 60_000) {
    // detached: a Ctrl-C at the terminal reaches the fleet runner alone, which stops the parts in order
    const env = { ...process.env, ...this.env, PORT: String(this.port) }
    const child = spawn(process.execPath, this.build.command, { cwd: this.build.cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    live.add(child)
    child.once('exit', () => live.delete(child))
    this.child = child
    const keep = (chunk: Buffer) => {
      this.log.push(String(chunk))
      if (this.log.length > 300) this.log.shift()
    }
    child.stdout!.on('data', keep)
    child.stderr!.on('data', keep)
    this.exit = new Promise(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline && child.exitCode === null) {
      if (await healthy(this.port)) return
      await sleep(150)
    }
    throw new Error(`${this.name} did not become healthy:\n${this.log.join('').slice(-3000)}`)
  }

  /** SIGTERM and wait for the exit; SIGKILL if it outlives `graceMs` */
  async stop (graceMs = 15_000) {
    if (!this.running) return
    this.child!.kill('SIGTERM')
    await Promise.race([this.exit, sleep(graceMs, undefined, { ref: false })])
    if (this.running) this.child!.kill('SIGKILL')
    await this.exit
  }
}

export interface Fleet {
  url: string
  haproxy: HAProxy
  instances: Instance[]
  databaseUrl: string
  /** the private cluster, when the fleet made one */
  postgres?: PrivatePostgres
  dataDir: string
  /** the instances as a Prometheus file-based service-discovery list; removed at stop */
  targetsFile: string
  /** the fleet's own folder (HAProxy's config and socket, the upgrade lock) */
  dir: string
  stop: () => Promise<void>
}

/** A file_sd target group: every instance's address, scraped as job `roja` (ops/prometheus/prometheus.yml). */
export interface TargetGroup {
  targets: string[]
  labels: Record<string, string>
}

export function targetGroups (instances: Array<{ port: number }>, balancerPort: number): TargetGroup[] {
  return [{ targets: instances.map(i => `127.0.0.1:${i.port}`), labels: { job: 'roja', fleet: `127.0.0.1:${balancerPort}` } }]
}

/** Written whole and renamed into place: Prometheus re-reads the file when it changes and must never see half of it. */
function writeTargets (file: string, groups: TargetGroup[]): void {
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(`${file}.tmp`, `${JSON.stringify(groups, null, 2)}\n`)
  renameSync(`${file}.tmp`, file)
}

// As through a TLS-terminating proxy, so that an instance in production mode (the soak's) answers too.
const healthy = (port: number) =>
  request({ port, path: '/health', timeout: 1000, headers: { 'x-forwarded-proto': 'https' } }).then(
    res => res.status === 200,
    () => false
  )

/** This working tree: the built server as `npm start` runs it, node flags included (dist), or the sources (tsx). */
export function workingTree (runtime: Runtime): Build {
  return { name: 'working tree', cwd: ROOT, command: runtime === 'dist' ? npmStartArgs(ROOT) : ['--import', 'tsx', 'src/server.ts'] }
}

export async function startFleet (opts: FleetOptions): Promise<Fleet> {
  const count = opts.instances ?? 3
  if (!Number.isInteger(count) || count < 1) throw new Error(`instances must be a positive integer, not ${count}`)
  const dir = mkdtempSync(join(tmpdir(), 'roja-fleet-'))
  const dataDir = join(dir, 'data')
  const cleanups: Array<() => Promise<void> | void> = [() => rmSync(dir, { recursive: true, force: true })]
  // Once, in reverse order of start; a second call (a signal during a test's teardown) waits for the first.
  let stopped: Promise<void> | undefined
  const cleanup = () =>
    (stopped ??= (async () => {
      for (const c of [...cleanups].reverse()) {
        try {
          await c()
        } catch {}
      }
    })())
  try {
    let postgres: PrivatePostgres | undefined
    if (!opts.databaseUrl) {
      postgres = await privatePostgres()
      const pg = postgres
      cleanups.push(() => pg.destroy())
    }
    const databaseUrl = opts.databaseUrl ?? postgres!.url
    const port = opts.port ?? (await freePort())
    const url = `http://127.0.0.1:${port}`
    const env: Record<string, string> = {
      // not production: production's HTTPS rule would want TLS between HAProxy and the instances
      ENVIRONMENT: 'staging',
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      REDIS_URL: opts.redisUrl,
      // shared by every instance: a token one instance signed is valid on all
      JWT_SECRET: process.env.JWT_SECRET ?? randomBytes(48).toString('base64url'),
      // HAProxy on loopback is the one proxy whose X-Forwarded-For is believed
      TRUST_PROXY: '127.0.0.1',
      // one media folder for all (uploads answered by one instance are read through another)
      DATA_DIR: dataDir,
      MEDIA_PUBLIC_URL: url,
      PROBLEM_BASE_URI,
      // on SIGTERM /health fails first: HAProxy (two checks 500 ms apart) takes the instance out
      // before its listener closes, so no request is sent to a closing port
      SHUTDOWN_DRAIN_MS: '1500',
      LOG_LEVEL: opts.logLevel ?? 'warn',
      ...(opts.smtpUrl ? { SMTP_URL: opts.smtpUrl } : {}),
      ...opts.env
    }
    // the built bundle runs as npm start runs it, node flags included
    const build = opts.build ?? workingTree(opts.runtime ?? 'dist')
    const instances: Instance[] = []
    for (let i = 1; i <= count; i++) instances.push(new Instance(`roja${i}`, await freePort(), build, env))
    cleanups.push(() => Promise.all(instances.map(i => i.stop())).then(() => {}))
    // The first instance migrates the database alone; the others then start together.
    await instances[0].start()
    await Promise.all(instances.slice(1).map(i => i.start()))
    const targetsFile = resolve(opts.targetsFile ?? join(dir, 'prometheus-targets.json'))
    cleanups.push(() => rmSync(targetsFile, { force: true }))
    writeTargets(targetsFile, targetGroups(instances, port))

    const haproxy = await startHAProxy({
      dir,
      port,
      backends: instances.map(i => ({ name: i.name, port: i.port })),
      problemBaseUri: PROBLEM_BASE_URI
    })
    cleanups.push(() => haproxy.stop())
    await haproxy.waitFor(
      instances.map(i => i.name),
      'UP'
    )
    // Stop order: the balancer first (no new requests), then the instances (they drain), then the database.
    return { url, haproxy, instances, databaseUrl, postgres, dataDir, targetsFile, dir, stop: cleanup }
  } catch (err) {
    await cleanup()
    throw err
  }
}
