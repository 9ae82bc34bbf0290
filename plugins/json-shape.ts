/**
 * What a JSON body may cost before it is parsed: a one-pass scan of its shape (nesting, members,
 * values, control characters in strings) and the largest body a route's schema can take.
 */

/** No schema nests near so deep; V8's parser and every walk after it recurse per level. */
export const MAX_JSON_DEPTH = 32
/** No schema takes near so many members, and V8 takes about 100 ms to parse 90,000 distinct keys. */
export const MAX_JSON_MEMBERS = 10_000
/** Values of any kind (array items too): no schema takes near so many. */
export const MAX_JSON_VALUES = 20_000

export type ShapeFault = 'depth' | 'members' | 'values' | 'control'

/**
 * The first limit the JSON text breaks, read in one pass at a cost linear in its length, or
 * undefined. `control`: a string holds an escaped control character other than tab, line feed and
 * carriage return (no person types one, and each is serialised back as six characters).
 */
export function shapeFault (text: string): ShapeFault | undefined {
  let depth = 0
  let members = 0
  let values = 1
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) {
        // a backslash: look at what it escapes
        const next = text.charCodeAt(++i)
        if (next === 98 || next === 102) return 'control' // \b \f
        if (
          next === 117 &&
          text.charCodeAt(i + 1) === 48 &&
          text.charCodeAt(i + 2) === 48 &&
          controlEscape(text.charCodeAt(i + 3), text.charCodeAt(i + 4))
        ) { return 'control' }
      } else if (c === 34) {
        inString = false
      }
    } else if (c === 34) {
      inString = true
    } else if (c === 91 || c === 123) {
      // [ {
      if (++depth > MAX_JSON_DEPTH) return 'depth'
      if (++values > MAX_JSON_VALUES) return 'values'
    } else if (c === 93 || c === 125) {
      depth--
    } else if (c === 44) {
      // a comma starts another value
      if (++values > MAX_JSON_VALUES) return 'values'
    } else if (c === 58 && ++members > MAX_JSON_MEMBERS) {
      return 'members'
    }
  }
  return undefined
}

// `\u00XY` with XY below 0x20, other than 09, 0A and 0D
function controlEscape (x: number, y: number): boolean {
  if (x !== 48 && x !== 49) return false
  const low = y >= 48 && y <= 57 ? y - 48 : (y | 32) >= 97 && (y | 32) <= 102 ? (y | 32) - 87 : -1
  if (low === -1) return false
  const code = (x - 48) * 16 + low
  return code !== 9 && code !== 10 && code !== 13
}

/** A control character no person types (C0 other than tab, line feed and carriage return). */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/

/** The JSON Pointer of the first string (or member name) in a parsed body holding a control character. */
export function controlPointer (value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return CONTROL.test(value) ? path : undefined
  if (value === null || typeof value !== 'object') return undefined
  for (const [key, item] of Object.entries(value)) {
    const at = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`
    if (CONTROL.test(key)) return at
    const found = controlPointer(item, at)
    if (found !== undefined) return found
  }
  return undefined
}

type Schema = Record<string, unknown>

// A character sent as `\uXXXX`, a code point beyond the BMP as two of them.
const BYTES_PER_CHARACTER = 12
const FORMAT_LENGTH: Record<string, number> = { uuid: 36, date: 10, 'date-time': 64, 'lenient-date-time': 64, email: 320 }

/**
 * The largest JSON text, without whitespace, that the schema accepts, every character escaped;
 * Infinity where the schema sets no bound (a string without maxLength, an array without maxItems).
 */
export function largestJson (schema: unknown, resolve: (ref: string) => unknown, seen = new Set<unknown>()): number {
  if (schema === null || typeof schema !== 'object' || seen.has(schema)) return Infinity
  const s = schema as Schema
  if (typeof s.$ref === 'string') {
    seen.add(schema)
    const size = largestJson(resolve(s.$ref), resolve, seen)
    seen.delete(schema)
    return size
  }
  const choices = (s.anyOf ?? s.oneOf) as unknown[] | undefined
  if (choices) return Math.max(...choices.map(c => largestJson(c, resolve, seen)))
  if (Array.isArray(s.enum)) return Math.max(...s.enum.map(v => JSON.stringify(v).length * 6))
  if (s.const !== undefined) return JSON.stringify(s.const).length * 6
  const types = [s.type].flat()
  return Math.max(...types.map(type => typed(type, s, resolve, seen)))
}

function typed (type: unknown, s: Schema, resolve: (ref: string) => unknown, seen: Set<unknown>): number {
  switch (type) {
    case 'null':
      return 4
    case 'boolean':
      return 5
    case 'integer':
    case 'number':
      return 32
    case 'string': {
      const length = typeof s.maxLength === 'number' ? s.maxLength : FORMAT_LENGTH[String(s.format)]
      return length === undefined ? Infinity : 2 + length * BYTES_PER_CHARACTER
    }
    case 'array': {
      if (typeof s.maxItems !== 'number') return Infinity
      return 2 + s.maxItems * (largestJson(s.items, resolve, seen) + 1)
    }
    case 'object': {
      if (s.additionalProperties !== false || s.patternProperties) return Infinity
      let size = 2
      for (const [key, value] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) {
        size += 4 + key.length * BYTES_PER_CHARACTER + largestJson(value, resolve, seen)
      }
      return size
    }
    default:
      return Infinity
  }
}
