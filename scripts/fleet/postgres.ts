import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../proc.js'

/**
 * A throw-away PostgreSQL cluster of the fleet's own: initdb into a temp folder as the
 * `postgres` OS user, its own port and socket folder. Stopping or restarting it (the outage
 * test does) disturbs nothing else on the machine.
 */
export interface PrivatePostgres {
  url: string
  port: number
  dir: string
  start: () => void
  /** fast shutdown: open sessions are ended, as an operator's restart would */
  stop: () => void
  /** stops the cluster and removes its folder */
  destroy: () => void
}

function binDir (): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b))
  if (versions.length === 0) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql')
  return `/usr/lib/postgresql/${versions[versions.length - 1]}/bin`
}

function asPostgres (cmd: string, args: string[]): void {
  // root runs the binaries as the postgres user (initdb and the server refuse root); anyone else runs them as themselves
  const r = process.getuid?.() === 0
    ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' })
    : spawnSync(cmd, args, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`)
}

export async function privatePostgres (): Promise<PrivatePostgres> {
  const bin = binDir()
  const dir = mkdtempSync(join(tmpdir(), 'roja-fleet-pg-'))
  chmodSync(dir, 0o777)
  const data = join(dir, 'data')
  const port = await freePort()
  asPostgres(`${bin}/initdb`, ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  // max_connections: three instances with a pool of ten each, the test's own client, and room to spare
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=60 -c fsync=on`
  const start = () => asPostgres(`${bin}/pg_ctl`, ['-D', data, '-w', '-t', '30', '-l', join(dir, 'postgres.log'), '-o', options, 'start'])
  const stop = () => asPostgres(`${bin}/pg_ctl`, ['-D', data, '-w', '-t', '30', '-m', 'fast', 'stop'])
  start()
  let destroyed = false
  const destroy = () => {
    if (destroyed) return
    destroyed = true
    try { stop() } catch {}
    rmSync(dir, { recursive: true, force: true })
  }
  // synchronous, so it also runs when this process exits on an error
  process.once('exit', destroy)
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, dir, start, stop, destroy }
}
