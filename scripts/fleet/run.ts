/**
 * `npm run fleet`: HAProxy in front of FLEET_INSTANCES (default 3) Roja instances, built first
 * the way `npm start` builds (only what changed; FLEET_RUNTIME=tsx runs the sources instead), on
 * one PostgreSQL and one Redis. DATABASE_URL (postgres://…) names the database; without it a
 * private throw-away cluster is started. REDIS_URL defaults to redis://127.0.0.1:6379; SMTP_URL,
 * JWT_SECRET and METRICS_TOKEN are passed on. Writes the instances' addresses as a Prometheus
 * targets file (FLEET_TARGETS_FILE, or prometheus-targets.json in the fleet's folder) and prints
 * the balancer's URL; Ctrl-C or SIGTERM stops the balancer, the instances, then the database.
 * FLEET_UPGRADE_FROM=<git revision> starts the instances on that revision's sources instead, and
 * SIGUSR2 then upgrades them one by one to this tree (scripts/fleet/upgrade.ts; docs/operations.md, Upgrades).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { startFleet, workingTree, type Fleet, type Runtime } from './fleet.js'
import { revisionBuild, rollingUpgrade } from './upgrade.js'

const runtime = (process.env.FLEET_RUNTIME ?? 'dist') as Runtime
if (runtime !== 'dist' && runtime !== 'tsx') throw new Error('FLEET_RUNTIME must be dist or tsx')
const databaseUrl = process.env.DATABASE_URL
if (databaseUrl && !databaseUrl.startsWith('postgres')) {
  console.error('DATABASE_URL must be a postgres:// URL: a fleet cannot share a SQLite file')
  process.exit(78)
}

// Handled from the first moment: a signal during the build or the start-up must not leave a
// half-started fleet (a private PostgreSQL runs on its own once started).
let stopping = false
let build: ChildProcess | undefined
let fleet: Fleet | undefined
const stop = async (why: string) => {
  if (stopping) return
  stopping = true
  console.log(`${why}: stopping the balancer, the instances, then the database`)
  build?.kill('SIGTERM')
  // still starting: stopped below once startFleet returns
  if (!fleet) return
  await fleet.stop()
  process.exit(0)
}
process.on('SIGINT', () => { void stop('SIGINT') })
process.on('SIGTERM', () => { void stop('SIGTERM') })
// npm passes a SIGTERM to its shell, not to this process: when the shell goes, so does the fleet
const parent = process.ppid
setInterval(() => { if (process.ppid !== parent) void stop('parent process gone') }, 500).unref()

// `npm start`'s own build (its prestart): the bundle, rewritten only where it changed, so a
// current dist/ is reused. Run here rather than by `npm run build && …` in package.json: then
// npm's signals reach this process itself.
if (runtime === 'dist') {
  const startedAt = Date.now()
  const cwd = resolve(import.meta.dirname, '../..')
  const code = await new Promise<number | null>((resolve) => {
    build = spawn('npm', ['run', 'prestart', '--silent'], { cwd, stdio: 'inherit' })
    build.once('error', () => resolve(1))
    build.once('exit', code => resolve(code))
  })
  build = undefined
  if (stopping) process.exit(1)
  if (code !== 0) process.exit(1)
  console.log(`built in ${Date.now() - startedAt} ms`)
}
const from = process.env.FLEET_UPGRADE_FROM ? revisionBuild(process.env.FLEET_UPGRADE_FROM) : undefined
if (from) process.once('exit', () => from.dispose())
const what = from ? `sources of ${from.name}` : runtime
const where = databaseUrl ? 'on DATABASE_URL' : 'on a private PostgreSQL'
console.log(`starting ${process.env.FLEET_INSTANCES ?? 3} instances (${what}), ${where} …`)
try {
  fleet = await startFleet({
    instances: Number(process.env.FLEET_INSTANCES ?? 3),
    runtime,
    build: from,
    port: process.env.FLEET_PORT ? Number(process.env.FLEET_PORT) : undefined,
    databaseUrl,
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    smtpUrl: process.env.SMTP_URL,
    logLevel: process.env.LOG_LEVEL ?? 'info',
    targetsFile: process.env.FLEET_TARGETS_FILE || undefined
  })
} catch (err) {
  // startFleet has stopped what it started
  console.error(`the fleet did not start: ${(err as Error).message}`)
  process.exit(1)
}
if (stopping) {
  await fleet.stop()
  process.exit(0)
}
for (const i of fleet.instances) {
  // the instances' own log lines, prefixed with their name
  const prefix = (chunk: Buffer) => process.stdout.write(String(chunk).replace(/^(?=.)/gm, `${i.name} | `))
  i.child!.stdout!.on('data', prefix)
  i.child!.stderr!.on('data', prefix)
}
console.log(`instances: ${fleet.instances.map(i => `${i.name} ${i.url} (pid ${i.pid})`).join(', ')}`)
console.log(`database: ${fleet.postgres ? `private cluster on port ${fleet.postgres.port} in ${fleet.postgres.dir} (deleted at stop)` : 'DATABASE_URL'}; media and mail: ${fleet.dataDir}`)
console.log(`prometheus targets: ${fleet.targetsFile} (scrape job roja: ops/prometheus/prometheus.yml)`)
console.log(`balancer: ${fleet.url}`)
console.log(`Ctrl-C or \`kill ${process.pid}\` stops the fleet`)
// an instance that dies on its own is reported; HAProxy has already taken it out
for (const i of fleet.instances) {
  void i.exit!.then(({ code, signal }) => { if (!stopping) console.error(`${i.name} exited (code ${code}, signal ${signal})`) })
}
if (from) {
  console.log(`on ${from.name}: \`kill -USR2 ${process.pid}\` upgrades the instances one by one to this tree (${runtime})`)
  process.on('SIGUSR2', () => {
    const started = Date.now()
    rollingUpgrade(fleet!, workingTree(runtime), line => console.log(`upgrade: ${line}`))
      .then(() => console.log(`upgrade: done in ${Date.now() - started} ms`), (err: Error) => console.error(`upgrade: ${err.message}`))
  })
}
