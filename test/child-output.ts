import type { ChildProcess } from 'node:child_process'
import { EventEmitter, once } from 'node:events'

/** What a child process has written to stdout and stderr so far, and whether its pipes have closed. */
export interface Output { text: string, closed: boolean, events: EventEmitter }

/** Collects a spawned child's stdout and stderr (both piped) as they arrive. */
export function collectOutput (child: ChildProcess): Output {
  const output: Output = { text: '', closed: false, events: new EventEmitter() }
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) throw new Error('collectOutput needs stdout and stderr piped')
    stream.setEncoding('utf8')
    stream.on('data', (c: string) => { output.text += c; output.events.emit('change') })
  }
  // 'close' comes after the last data of both pipes: a line written just before the exit is never missed.
  child.on('close', () => { output.closed = true; output.events.emit('change') })
  return output
}

/**
 * The first text matching `pattern` in the child's output, once it is there (looked for at each
 * chunk the child writes). Rejects, with all the output, when the child's pipes close first or the
 * deadline passes (a deadline, not a measurement).
 */
export async function waitForOutput (output: Output, pattern: RegExp, deadlineMs: number): Promise<string> {
  const deadline = AbortSignal.timeout(deadlineMs)
  for (;;) {
    const match = pattern.exec(output.text)
    if (match) return match[0]
    if (output.closed) throw new Error(`the process ended before ${pattern}:\n${output.text}`)
    try {
      await once(output.events, 'change', { signal: deadline })
    } catch {
      throw new Error(`no ${pattern} within ${deadlineMs} ms:\n${output.text}`)
    }
  }
}
