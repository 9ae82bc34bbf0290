/** One place for the date-time rules: output in UTC as YYYY-MM-DDTHH:MM:SS+0000, lenient RFC 3339 input. */

/** `YYYY-MM-DDTHH:MM:SS+0000`: UTC, colon-less offset, no fraction. */
export function formatDateTime (value: Date | string): string {
  // What Roja stores on SQLite is already toISOString's UTC form: cut it rather than parse it.
  if (typeof value === 'string' && value.length === 24 && value[23] === 'Z' && value[10] === 'T') return value.slice(0, 19) + '+0000'
  return toDate(value).toISOString().slice(0, 19) + '+0000'
}

export function formatNullableDateTime (value: Date | string | null): string | null {
  return value === null ? null : formatDateTime(value)
}

/** A column value (ISO text from SQLite, Date from PostgreSQL) as a Date. */
export function toDate (value: Date | string): Date {
  return value instanceof Date ? value : new Date(value)
}

let lastMs = 0

/**
 * The time of a write, as ISO text: it ADVANCES the clock, strictly increasing within the
 * process, so rows written in the same millisecond still sort in the order they were written
 * ("as added", newest first). It runs ahead of real time only while writes come faster than
 * one per millisecond. Reads use clockMs/clockIso, which never advance it.
 */
export function writeTimeIso (): string {
  lastMs = Math.max(Date.now(), lastMs + 1)
  return new Date(lastMs).toISOString()
}

/** Now on the same clock as writeTimeIso, without advancing it: compare stored times against this. */
export function clockMs (): number {
  return Math.max(Date.now(), lastMs)
}

/** clockMs as ISO text, for reads: a read must not advance the clock (at thousands of reads a second it would run ahead). */
export function clockIso (): string {
  return new Date(clockMs()).toISOString()
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|z|[+-]\d{2}:?\d{2})?$/

/** Is it an RFC 3339 date-time we accept (offset with or without colon, or none)? */
export function isLenientDateTime (value: string): boolean {
  const m = RFC3339.exec(value)
  if (!m) return false
  const [, y, mo, d, h, mi, s, , zone] = m
  if (+mo < 1 || +mo > 12 || +d < 1 || +d > 31 || +h > 23 || +mi > 59 || +s > 60) return false
  if (zone && /\d/.test(zone) && (+zone.slice(1, 3) > 23 || +zone.slice(-2) > 59)) return false
  const date = new Date(Date.UTC(+y, +mo - 1, +d))
  return date.getUTCDate() === +d
}

/** Parses an accepted input date-time to an ISO string in UTC; no zone means UTC, the fraction is dropped. */
export function parseDateTimeInput (value: string): string {
  const m = RFC3339.exec(value)
  // The same rule as validation, so a 2026-02-30 can never roll over into March.
  if (!m || !isLenientDateTime(value)) throw new TypeError(`not a date-time: ${value}`)
  const [, y, mo, d, h, mi, s, , zone] = m
  let offsetMin = 0
  if (zone && zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1
    const digits = zone.slice(1).replace(':', '')
    offsetMin = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2)))
  }
  const ms = Date.UTC(+y, +mo - 1, +d, +h, +mi, Math.min(+s, 59)) - offsetMin * 60_000
  return new Date(ms).toISOString()
}
