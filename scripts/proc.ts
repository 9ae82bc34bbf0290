import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
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
