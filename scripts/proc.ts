import { readdirSync, readFileSync } from 'node:fs'
import { request as httpRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http'
import { connect, createServer } from 'node:net'
import { join } from 'node:path'

/** Helpers for the harnesses and tests that run Roja as a child process on loopback. */

/**
 * `npm start`'s own command line in `dir`'s package.json, as node's arguments (`exec node …` or
 * `node …`: what follows `node`), so a harness runs the server with production's node flags, and a
 * tree of another commit with its own.
 */
export function npmStartArgs (dir: string): string[] {
  const start = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start.split(' ')
  return start.slice(start.indexOf('node') + 1)
}

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const probe = createServer()
    probe.on('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

/** Whether anything accepts connections on 127.0.0.1:`port` now. */
export function listening (port: number): Promise<boolean> {
  return new Promise(resolve => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

/**
 * One request to 127.0.0.1 on its own connection (no keep-alive), so that a refused request and a
 * failed one stay apart; `body` is sent as JSON. A timeout fails with code ETIMEDOUT.
 */
export function request (options: RequestOptions, body?: unknown): Promise<{ status: number, headers: IncomingHttpHeaders, body: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: '127.0.0.1',
      agent: false,
      ...options,
      headers: { ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}), ...options.headers }
    }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { text += c })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })))
    req.on('error', reject)
    req.end(payload)
  })
}

type Send = (method: string, path: string, body: unknown) => Promise<{ status: number, body: string }>

/**
 * Signs a new user up over HTTP as a person would, and confirms their address with the link that
 * sign-up queued: `verificationMail` reads that mail's body from the database.
 */
export async function signUpVerified (send: Send, verificationMail: (email: string) => Promise<string | undefined>, username: string, password: string) {
  const email = `${username}@example.com`
  const profile = await send('POST', '/v1/profiles', { first_name: 'Test', username, email, password })
  if (profile.status !== 201) throw new Error(`sign-up: ${profile.status} ${profile.body}`)
  const issued = await send('POST', '/v1/auth/token', { username, password })
  if (issued.status !== 200) throw new Error(`token: ${issued.status} ${issued.body}`)
  const link = /https?:\/\/\S+/.exec(String(await verificationMail(email)))?.[0]
  const verified = await send('POST', '/v1/email-verifications', { token: link && new URL(link).searchParams.get('token') })
  if (verified.status !== 204) throw new Error(`e-mail verification: ${verified.status} ${verified.body}`)
  const token = JSON.parse(issued.body).access_token as string
  return { id: JSON.parse(profile.body).id as string, username, email, token, auth: { authorization: `Bearer ${token}` } }
}

/** The samples of one metric in Prometheus text, with their labels. */
export function metricSamples (text: string, name: string): Array<{ labels: Record<string, string>, value: number }> {
  const found: Array<{ labels: Record<string, string>, value: number }> = []
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (m?.[1] !== name) continue
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => [k, v]))
    found.push({ labels, value: Number(m[3]) })
  }
  return found
}

/** Resident memory of a process, from /proc (0 once it is gone). */
export function rssBytes (pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) * 1024 : 0
  } catch {
    return 0
  }
}

// Linux reports CPU time in clock ticks of 1/CLK_TCK s; 100 on every Linux Node runs on (getconf CLK_TCK).
const TICK_MS = 10

/**
 * User plus system CPU time a process has used, all its threads, in milliseconds, from
 * /proc/<pid>/stat (fields 14 and 15); undefined where there is no /proc or the process is gone.
 */
export function cpuMs (pid: number): number | undefined {
  try {
    // the command name (field 2) is in parentheses and may hold spaces: count from after it
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS
  } catch {
    return undefined
  }
}

/** The CPU milliseconds of every process whose command is `command` (PostgreSQL's: `postgres`), by PID; empty without /proc. */
export function cpuMsByCommand (command: string): Map<number, number> {
  const found = new Map<number, number>()
  let pids: string[] = []
  try { pids = readdirSync('/proc').filter(name => /^\d+$/.test(name)) } catch {}
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== command) continue
    } catch { continue }
    const ms = cpuMs(Number(pid))
    if (ms !== undefined) found.set(Number(pid), ms)
  }
  return found
}

/** The whole machine's CPU time so far, in ticks, and the part of it the hypervisor gave to other guests. */
export interface MachineTicks { total: number, stolen: number }

/**
 * The first line of /proc/stat (`cpu  user nice system idle iowait irq softirq steal guest
 * guest_nice`): every state's ticks but the two guest fields, which user and nice already hold;
 * undefined where there is no /proc.
 */
export function machineTicks (stat?: string): MachineTicks | undefined {
  try {
    const fields = (stat ?? readFileSync('/proc/stat', 'utf8')).split('\n', 1)[0].trim().split(/\s+/).slice(1, 9).map(Number)
    if (fields.length < 8 || fields.some(n => !Number.isFinite(n))) return undefined
    return { total: fields.reduce((a, b) => a + b, 0), stolen: fields[7] }
  } catch {
    return undefined
  }
}

/** The share of the machine's CPU time stolen between two readings (0..1), undefined if either is missing or no time passed. */
export function stolenShare (before: MachineTicks | undefined, after: MachineTicks | undefined): number | undefined {
  if (before === undefined || after === undefined || after.total <= before.total) return undefined
  return (after.stolen - before.stolen) / (after.total - before.total)
}
