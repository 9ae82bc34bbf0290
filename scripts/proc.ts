import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/** Helpers for the harnesses and tests that run Roja as a child process on loopback. */

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
