import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
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

const INSTALL_HINT = 'install PostgreSQL\'s server (Debian: apt-get install -y postgresql) or give DATABASE_URL a PostgreSQL database'

/**
 * The server binaries: Debian and Ubuntu keep them under /usr/lib/postgresql/<major>/bin (the
 * newest is taken), off PATH; elsewhere (Fedora, Arch, Homebrew) initdb and pg_ctl are on PATH.
 */
export function binDir (root = '/usr/lib/postgresql'): string {
  const majors = existsSync(root)
    ? readdirSync(root).filter(v => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(a) - Number(b))
    : []
  if (majors.length > 0) return join(root, majors[majors.length - 1], 'bin')
  const onPath = (process.env.PATH ?? '').split(delimiter).find(d => d && existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')))
  if (onPath) return onPath
  throw new Error(`no PostgreSQL server binaries (initdb, pg_ctl) under ${root}/<version>/bin or on PATH: ${INSTALL_HINT}`)
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
