/**
 * Validation messages a person understands, written from the failed schema rule (the Ajv error's
 * keyword and params): allowed values listed, a pattern's character classes in words, lengths and
 * bounds in words. `field`, `rule` and `in` of an issue stay as they were; only `message` comes from here.
 */

export interface RuleFailure { keyword: string, message?: string, params: Record<string, unknown> }

const HOST_RULE = 'files are to be uploaded only to internal services'

const FORMATS: Record<string, string> = {
  uuid: 'must be a UUID such as 7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10',
  email: 'must be an e-mail address such as ada@example.com',
  uri: 'must be an absolute URL such as https://example.com/page',
  url: 'must be an absolute URL such as https://example.com/page',
  date: 'must be a calendar date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31, such as 2026-12-01',
  'date-time': 'must be an RFC 3339 date-time such as 2026-11-21T09:30:00Z',
  'lenient-date-time': 'must be a date-time such as 2026-11-21T09:30:00Z (RFC 3339; +hhmm offsets allowed; ' +
    'no zone means UTC), from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z',
  'media-url': HOST_RULE
}

const TYPES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null'
}

export function validationMessage (failure: RuleFailure): string {
  const p = failure.params
  switch (failure.keyword) {
    case 'required': return 'is required'
    case 'additionalProperties': return 'is not a known property'
    case 'enum': return `must be one of: ${(p.allowedValues as unknown[]).map(show).join(', ')}`
    case 'const': return `must be ${show(p.allowedValue)}`
    case 'type': return `must be ${orList(String(p.type).split(',').map(t => TYPES[t] ?? t))}`
    case 'minLength': return p.limit === 1 ? 'must not be empty' : `must be at least ${characters(p.limit)} long`
    case 'maxLength': return `must be at most ${characters(p.limit)} long`
    case 'minimum': return `must be ${String(p.limit)} or more`
    case 'maximum': return `must be ${String(p.limit)} or less`
    case 'exclusiveMinimum': return `must be more than ${String(p.limit)}`
    case 'exclusiveMaximum': return `must be less than ${String(p.limit)}`
    case 'multipleOf': return `must be a multiple of ${String(p.multipleOf)}`
    case 'minItems': return p.limit === 1 ? 'must not be empty' : `must have at least ${items(p.limit)}`
    case 'maxItems': return `must have at most ${items(p.limit)}`
    case 'uniqueItems': return `must not repeat a value (items ${String(p.j)} and ${String(p.i)} are the same)`
    case 'minProperties': return `must have at least ${String(p.limit)} properties`
    case 'maxProperties': return `must have at most ${String(p.limit)} properties`
    case 'format': return FORMATS[String(p.format)] ?? `must be a valid ${String(p.format)}`
    case 'pattern': return describeSort(String(p.pattern)) ?? describePattern(String(p.pattern))
    case 'anyOf': case 'oneOf': return 'must match one of the allowed forms'
  }
  return failure.message ?? 'is invalid'
}

// ListQuery's sort pattern: ^(?=.{1,N}$)(?!…repeated…)-?(a|b)(,-?(a|b)){0,K}$
const SORT_PATTERN = /^\^\(\?=\.\{1,\d+\}\$\)\(\?!.*\)-\?\(([^()]+)\)\(,-\?\(\1\)\)\{0,\d+\}\$$/

/** The sortable fields named by a list's sort pattern (schemas/common.ts ListQuery), or undefined. */
export function sortFields (pattern: string): string[] | undefined {
  return SORT_PATTERN.exec(pattern)?.[1].split('|').map(field => field.replace(/\\(.)/g, '$1'))
}

function describeSort (pattern: string): string | undefined {
  const fields = sortFields(pattern)
  return fields && `must be fields among ${fields.join(', ')}, comma-separated, each at most once (a leading - sorts descending)`
}

function show (value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value)
}
function characters (n: unknown) { return n === 1 ? '1 character' : `${String(n)} characters` }
function items (n: unknown) { return n === 1 ? '1 item' : `${String(n)} items` }

function orList (words: string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`
}

// ---- patterns in words -------------------------------------------------------------------
// Roja's patterns are short: anchors, literals, character classes, groups with alternatives and
// quantifiers. Anything else falls back to quoting the pattern.

type Node =
  | { kind: 'chars', set: Set<string> }
  | { kind: 'literal', text: string }
  | { kind: 'group', alternatives: Item[][] }
type Item = { node: Node, min: number, max: number }

class Unsupported extends Error {}

export function describePattern (pattern: string): string {
  try {
    let body = pattern
    const start = body.startsWith('^')
    if (start) body = body.slice(1)
    const end = body.endsWith('$') && !body.endsWith('\\$')
    if (end) body = body.slice(0, -1)
    let spaces = false
    if (start && end && body.startsWith('\\s*') && body.endsWith('\\s*') && body.length > 6) {
      body = body.slice(3, -3)
      spaces = true
    }
    if (start && end && !spaces) {
      const list = describeCommaList(body)
      if (list) return list
    }
    const sequence = parse(body)
    const words = sayItems(sequence)
    const lead = start && end ? 'must be' : start ? 'must start with' : end ? 'must end with' : 'must contain'
    return `${lead} ${words}${spaces ? ' (spaces around it are ignored)' : ''}`
  } catch (err) {
    if (!(err instanceof Unsupported)) throw err
    return `must match the pattern ${pattern}`
  }
}

function parse (pattern: string): Item[] {
  const parser = new PatternParser(pattern)
  const sequence = parser.sequence()
  if (!parser.done()) throw new Unsupported()
  return sequence
}

/**
 * `X(,X)*` or `X(,X){0,n}` (a sort, a tags filter) as a list: its choices named when X has few
 * (`must be a comma list of: created_at, -created_at, title, -title`), else what each item must be.
 */
function describeCommaList (body: string): string | undefined {
  const match = /^(.+)\(,\1\)(?:\*|\{0,(\d+)\})$/.exec(body)
  if (!match) return undefined
  const item = parse(match[1])
  const most = match[2] === undefined ? '' : ` up to ${Number(match[2]) + 1}`
  const choices = enumerate(item)
  if (choices) return `must be a comma list of${most}: ${choices.join(', ')}`
  return `must be a comma list of${most} items, each ${sayItems(item, true)}`
}

const MAX_CHOICES = 40

/** Every string a sequence of literals, optional items and groups matches, when there are few; else undefined. */
function enumerate (items: Item[]): string[] | undefined {
  let strings = ['']
  for (const { node, min, max } of items) {
    if (max !== 1 || node.kind === 'chars') return undefined
    const options = node.kind === 'literal' ? [node.text] : alternativesOf(node.alternatives)
    if (!options) return undefined
    const each = [...(min === 0 ? [''] : []), ...options]
    // the later item varies slowest: `-?(a|b)` reads a, -a, b, -b
    const next: string[] = []
    for (const option of each) for (const prefix of strings) next.push(prefix + option)
    if (next.length > MAX_CHOICES) return undefined
    strings = next
  }
  return strings
}

function alternativesOf (alternatives: Item[][]): string[] | undefined {
  const out: string[] = []
  for (const alternative of alternatives) {
    const strings = enumerate(alternative)
    if (!strings) return undefined
    out.push(...strings)
  }
  return out
}

class PatternParser {
  private i = 0
  constructor (private readonly s: string) {}
  done () { return this.i >= this.s.length }

  sequence (): Item[] {
    const out: Item[] = []
    while (!this.done() && this.s[this.i] !== '|' && this.s[this.i] !== ')') {
      const node = this.atom()
      const [min, max] = this.quantifier()
      const last = out[out.length - 1]
      // consecutive plain characters read as one literal word ('http', '://')
      if (node.kind === 'literal' && min === 1 && max === 1 && last?.node.kind === 'literal' && last.min === 1 && last.max === 1) {
        last.node = { kind: 'literal', text: last.node.text + node.text }
      } else out.push({ node, min, max })
    }
    return out
  }

  private atom (): Node {
    const c = this.s[this.i]
    if (c === '(') {
      this.i++
      if (this.s.startsWith('?:', this.i)) this.i += 2
      const alternatives = [this.sequence()]
      while (this.s[this.i] === '|') { this.i++; alternatives.push(this.sequence()) }
      if (this.s[this.i] !== ')') throw new Unsupported()
      this.i++
      return { kind: 'group', alternatives }
    }
    if (c === '[') return this.charClass()
    if (c === '\\') {
      const e = this.s[this.i + 1]
      this.i += 2
      const cls = ESCAPE_CLASSES[e]
      if (cls) return { kind: 'chars', set: new Set([cls]) }
      if (/[a-zA-Z0-9]/.test(e ?? 'a')) throw new Unsupported()
      return { kind: 'literal', text: e }
    }
    if ('.^$*+?{}'.includes(c)) throw new Unsupported()
    this.i++
    return { kind: 'literal', text: c }
  }

  private charClass (): Node {
    this.i++ // [
    if (this.s[this.i] === '^') throw new Unsupported()
    const set = new Set<string>()
    while (this.i < this.s.length && this.s[this.i] !== ']') {
      let c = this.s[this.i]
      if (c === '\\') {
        const e = this.s[this.i + 1]
        this.i += 2
        const cls = ESCAPE_CLASSES[e]
        if (cls) { set.add(cls); continue }
        c = e
      } else this.i++
      if (this.s[this.i] === '-' && this.s[this.i + 1] !== ']' && this.i + 1 < this.s.length) {
        const to = this.s[this.i + 1]
        this.i += 2
        set.add(rangeName(c, to))
      } else set.add(`'${c}'`)
    }
    if (this.s[this.i] !== ']') throw new Unsupported()
    this.i++
    return { kind: 'chars', set }
  }

  private quantifier (): [number, number] {
    const c = this.s[this.i]
    if (c === '*') { this.i++; return [0, Infinity] }
    if (c === '+') { this.i++; return [1, Infinity] }
    if (c === '?') { this.i++; return [0, 1] }
    if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.s.slice(this.i))
      if (!m) throw new Unsupported()
      this.i += m[0].length
      const min = Number(m[1])
      return [min, m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3])]
    }
    return [1, 1]
  }
}

const ESCAPE_CLASSES: Record<string, string> = { d: 'digits', s: 'spaces', w: 'letters, digits or _' }

function rangeName (from: string, to: string): string {
  if (from === 'a' && to === 'z') return 'lower-case letters'
  if (from === 'A' && to === 'Z') return 'upper-case letters'
  if (from === '0' && to === '9') return 'digits'
  return `${from} to ${to}`
}

/** A character set in words, e.g. "letters, digits, '_' or '-'". */
function sayChars (set: Set<string>): string {
  const names = [...set]
  const upper = names.indexOf('upper-case letters')
  const lower = names.indexOf('lower-case letters')
  if (upper >= 0 && lower >= 0) {
    names.splice(Math.max(upper, lower), 1)
    names[Math.min(upper, lower)] = 'letters'
  }
  if (names.length === 2 && names.includes('digits') && names.includes('a to f')) return 'lower-case hexadecimal digits'
  return orList(names)
}

const SINGULAR: Record<string, string> = {
  letters: 'letter',
  digits: 'digit',
  spaces: 'space',
  'lower-case letters': 'lower-case letter',
  'upper-case letters': 'upper-case letter',
  'lower-case hexadecimal digits': 'lower-case hexadecimal digit'
}

/** One character of a set, e.g. "a letter, digit, '_' or '-'". */
function sayOneChar (set: Set<string>): string {
  const plural = sayChars(set)
  return `a ${plural.replace(/(lower-case hexadecimal digits|lower-case letters|upper-case letters|letters|digits|spaces)/g, w => SINGULAR[w] ?? w)}`
}

function sayNode (node: Node, nested: boolean): string {
  if (node.kind === 'literal') return `'${node.text}'`
  if (node.kind === 'chars') return sayChars(node.set)
  const options = node.alternatives.map(a => sayItems(a, true))
  if (node.alternatives.every(a => a.length === 1 && a[0].node.kind === 'literal' && a[0].min === 1 && a[0].max === 1)) {
    return options.length === 1 ? options[0] : `one of ${orList(options)}`
  }
  const text = options.length === 1 ? options[0] : `either ${options.join(' or ')}`
  return nested ? `(${text})` : text
}

function sayItem ({ node, min, max }: Item, nested: boolean): string {
  if (node.kind === 'chars') {
    // a set of characters counts characters
    const what = sayChars(node.set)
    if (min === 1 && max === 1) return sayOneChar(node.set)
    if (min === 0 && max === 1) return `optionally ${sayOneChar(node.set)}`
    if (min === 0 && max === Infinity) return `any number of ${what}`
    if (min === 1 && max === Infinity) return `one or more ${what}`
    return `${count(min, max)} ${what}`
  }
  // a literal or group counts repetitions of itself
  const what = sayNode(node, nested || min !== 1 || max !== 1)
  if (min === 1 && max === 1) return what
  if (min === 0 && max === 1) return `optionally ${what}`
  if (min === 0 && max === Infinity) return `any number of times ${what}`
  if (min === 1 && max === Infinity) return `one or more times ${what}`
  return `${count(min, max)} times ${what}`
}

function count (min: number, max: number): string {
  return min === max ? `${min}` : max === Infinity ? `${min} or more` : min === 0 ? `up to ${max}` : `${min} to ${max}`
}

/** Items in order: ", then " at the top, " followed by " inside a group. */
function sayItems (items: Item[], nested = false): string {
  return items.map(item => sayItem(item, nested)).join(nested ? ' followed by ' : ', then ')
}
