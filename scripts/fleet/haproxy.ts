import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/** HAProxy in front of the fleet: the config template beside this file, run in the foreground. */

export interface Backend { name: string, port: number }

export interface HAProxy {
  url: string
  port: number
  /** one admin command on the stats socket (`show stat`, `show servers state` …) */
  command: (line: string) => Promise<string>
  /** each server's status as HAProxy sees it: UP, DOWN, MAINT, NOLB (draining) … */
  states: () => Promise<Record<string, string>>
  /** resolves once every named server has the status (or throws after `timeoutMs`) */
  waitFor: (names: string[], status: string, timeoutMs?: number) => Promise<void>
  stop: () => Promise<void>
  child: ChildProcess
  log: string[]
}

const TEMPLATE = join(import.meta.dirname, 'haproxy.cfg')

export function renderConfig (backends: Backend[]): string {
  return readFileSync(TEMPLATE, 'utf8')
    .replace('{{use-server}}', backends.map(b => `    use-server ${b.name} if { req.hdr(x-fleet-instance) -m str ${b.name} }`).join('\n'))
    .replace('{{server}}', backends.map(b => `    server ${b.name} 127.0.0.1:${b.port}`).join('\n'))
}

export async function startHAProxy (opts: { dir: string, port: number, backends: Backend[], problemBaseUri: string }): Promise<HAProxy> {
  const config = join(opts.dir, 'haproxy.cfg')
  const socket = join(opts.dir, 'haproxy.sock')
  writeFileSync(config, renderConfig(opts.backends))
  const env = { ...process.env, FLEET_BIND: `127.0.0.1:${opts.port}`, FLEET_STATS_SOCKET: socket, FLEET_PROBLEM_BASE: opts.problemBaseUri.replace(/\/+$/, '') }
  const check = spawnSync('haproxy', ['-c', '-q', '-f', config], { env, encoding: 'utf8' })
  if (check.error) throw new Error(`haproxy is not installed (Debian: apt-get install -y haproxy): ${check.error.message}`)
  if (check.status !== 0) throw new Error(`haproxy refused ${config}:\n${check.stderr}${check.stdout}`)

  // -db: stay in the foreground, so the fleet owns the process and its exit
  const child = spawn('haproxy', ['-db', '-f', config], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  process.once('exit', () => child.kill('SIGKILL'))
  const log: string[] = []
  const keep = (chunk: Buffer) => { log.push(String(chunk)); if (log.length > 200) log.shift() }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))

  const command = (line: string) => new Promise<string>((resolve, reject) => {
    const conn = connect(socket)
    let text = ''
    conn.setEncoding('utf8')
    conn.on('data', (c: string) => { text += c })
    conn.on('end', () => resolve(text))
    conn.on('error', reject)
    conn.end(`${line}\n`)
  })

  const states = async () => {
    const csv = (await command('show stat')).trim().split('\n')
    const header = csv[0].replace(/^# /, '').split(',')
    const at = (name: string) => header.indexOf(name)
    const result: Record<string, string> = {}
    for (const row of csv.slice(1).map(l => l.split(','))) {
      if (row[at('pxname')] === 'roja' && row[at('svname')] !== 'BACKEND') result[row[at('svname')]] = row[at('status')]
    }
    return result
  }

  const waitFor = async (names: string[], status: string, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs
    let last: Record<string, string> = {}
    while (Date.now() < deadline) {
      try {
        last = await states()
        // `DOWN 1/2` and `UP 1/2` are transitions still under way
        if (names.every(n => last[n] === status)) return
      } catch {} // the socket appears a moment after the start
      await sleep(100)
    }
    throw new Error(`HAProxy did not see ${names.join(', ')} ${status} within ${timeoutMs} ms: ${JSON.stringify(last)}\n${log.join('')}`)
  }

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    // SIGUSR1: soft stop, the requests in flight finish; SIGTERM after a grace
    child.kill('SIGUSR1')
    await Promise.race([exited, sleep(5000, undefined, { ref: false })])
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  }

  return { url: `http://127.0.0.1:${opts.port}`, port: opts.port, command, states, waitFor, stop, child, log }
}
