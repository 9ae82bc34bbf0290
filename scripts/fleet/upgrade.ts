import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Build, Fleet, Instance } from './fleet.js'

/**
 * A rolling upgrade of a running fleet (docs/operations.md, Upgrades): one instance at a time is
 * drained through HAProxy (no new requests; those under way finish), stopped, started again on the
 * new build and put back. The first new instance runs the new release's migrations, which must be
 * expand-only (docs/development.md, Migrations), so the old instances still serving meet a schema
 * they can ignore. A second upgrade while one runs is refused (a lock file in the fleet's folder);
 * a new instance that does not come up (its migration failed) is put back on the old build and the
 * upgrade stops there, the others untouched.
 */

const ROOT = resolve(import.meta.dirname, '../..')

export class UpgradeError extends Error {}

/** The sources of a git revision in a folder of their own, run with tsx on this tree's node_modules; `dispose` removes it. */
export function revisionBuild (revision: string): Build & { commit: string, dispose: () => void } {
  const commit = execFileSync('git', ['-C', ROOT, 'rev-parse', '--verify', `${revision}^{commit}`], { encoding: 'utf8' }).trim()
  const cwd = mkdtempSync(join(tmpdir(), `roja-build-${commit.slice(0, 12)}-`))
  execFileSync('sh', ['-c', 'git -C "$1" archive "$2" | tar -x -C "$3"', 'sh', ROOT, commit, cwd])
  symlinkSync(join(ROOT, 'node_modules'), join(cwd, 'node_modules'))
  const dispose = () => rmSync(cwd, { recursive: true, force: true })
  return { name: commit.slice(0, 12), commit, cwd, command: ['--import', 'tsx', 'src/server.ts'], dispose }
}

/**
 * The release before the newest migration: the parent of the commit that added it. Upgrading from it
 * to this tree runs that migration (and any added with it) under the fleet's load.
 */
export function previousRelease (): string {
  const newest = readdirSync(join(ROOT, 'src/db/migrations')).filter(f => f.endsWith('.ts')).sort().at(-1)!
  // --first-parent: on main, the merge that brought the migration in; its first parent is the release before
  const git = ['-C', ROOT, 'log', '--first-parent', '--diff-filter=A', '--format=%H', '-1', '--', `src/db/migrations/${newest}`]
  const added = execFileSync('git', git, { encoding: 'utf8' }).trim()
  const shallow = execFileSync('git', ['-C', ROOT, 'rev-parse', '--is-shallow-repository'], { encoding: 'utf8' }).trim() === 'true'
  if (!added && shallow) throw new UpgradeError('this clone is shallow: `git fetch --unshallow` brings the release before, or name it in FLEET_UPGRADE_FROM')
  if (!added) throw new UpgradeError(`${newest} is not committed: commit it, or name the old revision`)
  return `${added}^`
}

/** The old revision's sources with one more migration that fails: the upgrade that must stop. */
export function failingBuild (revision: string): ReturnType<typeof revisionBuild> {
  const build = revisionBuild(revision)
  const file = join(build.cwd, 'src/db/migrate.ts')
  const text = readFileSync(file, 'utf8')
  const list = /(export const migrations[^=]*= \{[\s\S]*?)\n\}/
  if (!list.test(text)) throw new UpgradeError('src/db/migrate.ts has no migration list to add to')
  writeFileSync(file, text.replace(list, `$1,
  '9999_12_31_0001_fails': {
    up: async (db: any) => {
      await db.schema.createTable('upgrade_probe').addColumn('id', 'integer').execute()
      throw new Error('a migration that fails')
    }
  }
}`))
  return { ...build, name: `${build.name}+failing migration` }
}

export interface UpgradeStep { instance: string, drainedMs: number, stoppedMs: number, upMs: number }

/** Replaces every instance's build with `to`, one at a time; resolves with each step's timings. */
export async function rollingUpgrade (fleet: Fleet, to: Build, log: (line: string) => void = () => {}): Promise<UpgradeStep[]> {
  const lock = join(fleet.dir, 'upgrade.lock')
  let fd: number
  try {
    fd = openSync(lock, 'wx')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    throw new UpgradeError(`an upgrade is already running (${lock}: ${readFileSync(lock, 'utf8').trim()}): wait for it to end`)
  }
  writeFileSync(fd, `pid ${process.pid}, to ${to.name}, since ${new Date().toISOString()}\n`)
  closeSync(fd)
  try {
    const steps: UpgradeStep[] = []
    for (const instance of fleet.instances) steps.push(await replace(fleet, instance, to, log))
    return steps
  } finally {
    rmSync(lock, { force: true })
  }
}

async function replace (fleet: Fleet, instance: Instance, to: Build, log: (line: string) => void): Promise<UpgradeStep> {
  const started = Date.now()
  const server = `roja/${instance.name}`
  await fleet.haproxy.command(`set server ${server} state drain`)
  await drained(fleet, instance.name)
  const drainedAt = Date.now()
  log(`${instance.name}: drained in ${drainedAt - started} ms`)
  await instance.stop()
  const stoppedAt = Date.now()
  const old = instance.build
  instance.build = to
  try {
    await instance.start()
  } catch (err) {
    log(`${instance.name}: ${to.name} did not come up; back to ${old.name}`)
    await instance.stop()
    instance.build = old
    await instance.start()
    await fleet.haproxy.command(`set server ${server} state ready`)
    await fleet.haproxy.waitFor([instance.name], 'UP', 15_000)
    throw new UpgradeError(`${instance.name} did not come up on ${to.name}; the upgrade stopped, ${old.name} serves:\n` +
      (err as Error).message)
  }
  await fleet.haproxy.command(`set server ${server} state ready`)
  await fleet.haproxy.waitFor([instance.name], 'UP', 15_000)
  const upAt = Date.now()
  log(`${instance.name}: on ${to.name}, up ${upAt - stoppedAt} ms after it stopped`)
  return { instance: instance.name, drainedMs: drainedAt - started, stoppedMs: stoppedAt - drainedAt, upMs: upAt - stoppedAt }
}

/** Waits until HAProxy holds no request on the server: drained, its requests under way answered. */
async function drained (fleet: Fleet, name: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const csv = (await fleet.haproxy.command('show stat')).trim().split('\n')
    const header = csv[0].replace(/^# /, '').split(',')
    const at = (column: string) => header.indexOf(column)
    const row = csv.slice(1).map(l => l.split(',')).find(r => r[at('pxname')] === 'roja' && r[at('svname')] === name)
    if (row && row[at('status')].startsWith('DRAIN') && Number(row[at('scur')]) === 0) return
    await sleep(100)
  }
  throw new UpgradeError(`${name} still had requests ${timeoutMs} ms after it was set to drain`)
}
