/** The process's clock for stored times: writes advance it, reads only look at it. */

let lastMs = 0

/**
 * The time of a write, as ISO text, strictly increasing within the process, so rows written in the
 * same millisecond still sort in the order they were written. It runs ahead of real time only
 * while writes come faster than one per millisecond.
 */
export function writeTimeIso (): string {
  lastMs = Math.max(Date.now(), lastMs + 1)
  return new Date(lastMs).toISOString()
}

/** Now on the same clock as writeTimeIso, without advancing it: compare stored times against this. */
export function clockMs (): number {
  return Math.max(Date.now(), lastMs)
}

/** clockMs as ISO text, for reads: a read must not advance the clock, or busy reads would run it ahead. */
export function clockIso (): string {
  return new Date(clockMs()).toISOString()
}
