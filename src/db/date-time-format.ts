/** The date-time formats, in one place: output in UTC as YYYY-MM-DDTHH:MM:SS+0000, lenient RFC 3339 input. */

/** `YYYY-MM-DDTHH:MM:SS+0000`: UTC, colon-less offset, no fraction. */
export function formatDateTime (value: Date | string): string {
  // What Roja stores on SQLite is already toISOString's UTC form: cut it rather than parse it.
  if (typeof value === 'string' && value.length === 24 && value[23] === 'Z' && value[10] === 'T') return value.slice(0, 19) + '+0000'
  return toDate(value).toISOString().slice(0, 19) + '+0000'
}

export function formatNullableDateTime (value: Date | string | null): string | null {
  return value === null ? null : formatDateTime(value)
}

/**
 * PostgreSQL's text of a timestamptz in a UTC session (`2026-11-25 18:22:35.221456+00`) as the
 * ISO text Roja writes and SQLite gives back (`2026-11-25T18:22:35.221Z`), cut, not parsed: the
 * fraction to milliseconds, truncated as a Date would be. Any other form (another zone, BC, a
 * five-digit year) is undefined, for the caller to parse.
 */
export function isoFromUtcTimestampText (text: string): string | undefined {
  const n = text.length
  if (n < 22 || text[4] !== '-' || text[10] !== ' ' || !text.endsWith('+00')) return undefined
  const day = text.slice(0, 10)
  const time = text.slice(11, 19)
  if (n === 22) return `${day}T${time}.000Z`
  if (text[19] !== '.') return undefined
  return `${day}T${time}.${text.slice(20, Math.min(23, n - 3)).padEnd(3, '0')}Z`
}

/** A column value (ISO text on both dialects; a Date where a caller has one) as a Date. */
export function toDate (value: Date | string): Date {
  return value instanceof Date ? value : new Date(value)
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|z|[+-]\d{2}:?\d{2})?$/

// What the output form (four-digit years, UTC) and PostgreSQL (no year 0) can both hold.
const EARLIEST_MS = utcMs(1, 1, 1, 0, 0, 0)
const LATEST_MS = utcMs(9999, 12, 31, 23, 59, 59)

/**
 * Date.UTC reads years 0–99 as 1900–1999; setUTCFullYear takes the year as given, so
 * 0001–0099 stay themselves.
 */
function utcMs (y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d)
  date.setUTCHours(h, mi, s, 0)
  return date.getTime()
}

/** The instant an input names, in ms since the epoch, or undefined when it is no valid RFC 3339 date-time. */
function inputMs (value: string): number | undefined {
  const m = RFC3339.exec(value)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s, , zone] = m
  if (+mo < 1 || +mo > 12 || +d < 1 || +d > 31 || +h > 23 || +mi > 59 || +s > 60) return undefined
  if (zone && /\d/.test(zone) && (+zone.slice(1, 3) > 23 || +zone.slice(-2) > 59)) return undefined
  // No roll-over: a 2026-02-30 is refused, not read as March.
  const day = new Date(utcMs(+y, +mo, +d, 0, 0, 0))
  if (day.getUTCDate() !== +d) return undefined
  let offsetMin = 0
  if (zone && zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1
    const digits = zone.slice(1).replace(':', '')
    offsetMin = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2)))
  }
  // A leap second is read as the second before it; the fraction is dropped.
  return utcMs(+y, +mo, +d, +h, +mi, Math.min(+s, 59)) - offsetMin * 60_000
}

/**
 * Is it an RFC 3339 date-time we accept (offset with or without colon, or none), naming an
 * instant from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z?
 */
export function isLenientDateTime (value: string): boolean {
  const ms = inputMs(value)
  return ms !== undefined && ms >= EARLIEST_MS && ms <= LATEST_MS
}

/** A calendar date `YYYY-MM-DD` from 0001-01-01 to 9999-12-31 (PostgreSQL has no year 0; ajv-formats' `date` allows it). */
export function isCalendarDate (value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value)
  if (!m || +m[1] < 1 || +m[2] < 1 || +m[2] > 12 || +m[3] < 1) return false
  return new Date(utcMs(+m[1], +m[2], +m[3], 0, 0, 0)).getUTCDate() === +m[3]
}

/** Parses an accepted input date-time to an ISO string in UTC; no zone means UTC, the fraction is dropped. */
export function parseDateTimeInput (value: string): string {
  // The same rule as validation, so nothing validation refused is ever stored.
  if (!isLenientDateTime(value)) throw new TypeError(`not a date-time: ${value}`)
  return new Date(inputMs(value)!).toISOString()
}
