import { pino } from 'pino'

/**
 * A log stream written once per event-loop turn: the lines a turn logs are joined and handed on
 * together when the turn ends (setImmediate). Under load one write carries every line of a turn,
 * dozens of them; a quiet server's line goes out at the end of its turn.
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
 * The process's stdout for pino, shared by every logger as they share fd 1: turn-batched, each
 * batch written synchronously by pino's sonic-boom (which finishes partial writes and retries a
 * full pipe); on exit what is left is written. sonic-boom's own batching (async, minLength)
 * measures its growing buffer on every line, copying it each time, and gives each batch to the
 * thread pool: 2–6 µs a request more (bench/history/README.md, "the log sink").
 */
export function stdoutLines (): BatchedLineWriter {
  if (stdout === undefined) {
    stdout = new BatchedLineWriter(pino.destination({ dest: 1, sync: true }))
    process.once('exit', stdout.flush)
  }
  return stdout
}
