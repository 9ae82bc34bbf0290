import { pino } from 'pino'

/**
 * Writes the lines one event-loop turn logs together, when the turn ends (setImmediate).
 * Why: docs/decisions/0006-batched-log-writes.md
 */
export class BatchedLineWriter {
  private lines: string[] = []
  private scheduled = false

  constructor (private readonly out: { write: (text: string) => unknown }) {}

  write (line: string): void {
    this.lines.push(line)
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(this.flush)
    }
  }

  /** hands on what this turn has logged so far */
  readonly flush = (): void => {
    this.scheduled = false
    if (this.lines.length === 0) return
    const text = this.lines.length === 1 ? this.lines[0] : this.lines.join('')
    this.lines = []
    this.out.write(text)
  }
}

let stdout: BatchedLineWriter | undefined

/**
 * The process's stdout for pino, one for every logger as they share fd 1: each batch written
 * synchronously by sonic-boom (it finishes partial writes), and what is left written at exit.
 */
export function stdoutLines (): BatchedLineWriter {
  if (stdout === undefined) {
    stdout = new BatchedLineWriter(pino.destination({ dest: 1, sync: true }))
    process.once('exit', stdout.flush)
  }
  return stdout
}
