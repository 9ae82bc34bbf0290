import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Searches log text for secrets: every issued secret whole and its signature alone (what a
 * redaction that kept part of a token would leave), anything shaped like a JWT, and fixed
 * strings such as the JWT secret. A hit names where, never the secret.
 */

export interface Secret { kind: string, value: string }
export interface Hit { file: string, line: number, what: string }

// A signature shorter than this is searched as a plain string (HS256 signatures are 43).
const KEY = 16
const JWT_SHAPED = /eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g

interface Needle { signature: string, secret: Secret }

export class SecretIndex {
  readonly size: number
  private readonly byKey = new Map<string, Needle[]>()
  private readonly plain: Array<{ text: string, what: string }> = []
  // base64url runs shorter than the shortest signature (UUIDs, most of a log) cannot hold one
  private readonly run: RegExp

  constructor (secrets: Secret[], literals: Array<{ text: string, what: string }> = []) {
    const seen = new Set<string>()
    let shortest = Infinity
    for (const secret of secrets) {
      if (seen.has(secret.value)) continue
      seen.add(secret.value)
      // a JWT's signature is its last part; a secret without dots is all signature
      const signature = secret.value.slice(secret.value.lastIndexOf('.') + 1)
      if (signature.length >= KEY && /^[A-Za-z0-9_-]+$/.test(signature)) {
        const key = signature.slice(0, KEY)
        const needles = this.byKey.get(key) ?? []
        needles.push({ signature, secret })
        this.byKey.set(key, needles)
        shortest = Math.min(shortest, signature.length)
      } else {
        this.plain.push({ text: secret.value, what: `a whole ${secret.kind}` })
      }
    }
    this.plain.push(...literals)
    this.size = seen.size
    this.run = new RegExp(`(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{${Number.isFinite(shortest) ? shortest : KEY},}`, 'g')
  }

  /** Where `text` leaks, if anything: the offset of each find and what it is. */
  search (text: string): Array<{ at: number, what: string }> {
    const found: Array<{ at: number, what: string }> = []
    for (const { text: needle, what } of this.plain) {
      for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) found.push({ at, what })
    }
    // Every window of every base64url run is looked up, so a signature glued to other text is found too.
    for (const match of text.matchAll(this.run)) {
      const run = match[0]
      for (let i = 0; i + KEY <= run.length; i++) {
        for (const { signature, secret } of this.byKey.get(run.slice(i, i + KEY)) ?? []) {
          if (!run.startsWith(signature, i)) continue
          const at = match.index + i
          const whole = text.slice(Math.max(0, at - secret.value.length), at + signature.length).includes(secret.value)
          found.push({ at, what: whole ? `a whole ${secret.kind}` : `the signature of one ${secret.kind}` })
        }
      }
    }
    for (const match of text.matchAll(JWT_SHAPED)) found.push({ at: match.index, what: 'a JWT-shaped string' })
    return found.sort((a, b) => a.at - b.at)
  }
}

/** Every hit in `text`, by line number (from 1). */
export function scanText (text: string, index: SecretIndex, file = '-'): Hit[] {
  let line = 1
  let counted = 0
  return index.search(text).map(({ at, what }) => {
    for (let nl = text.indexOf('\n', counted); nl !== -1 && nl < at; nl = text.indexOf('\n', nl + 1)) { line++; counted = nl + 1 }
    return { file, line, what }
  })
}

export interface DirScan { files: number, lines: number, bytes: number, secrets: number, hits: Hit[] }

/** The secrets recorded in `dir` (`*.secrets.jsonl`) searched for in every log there (`*.log`). */
export function scanDir (dir: string, literals: Array<{ text: string, what: string }> = []): DirScan {
  const names = readdirSync(dir).sort()
  const secrets = names.filter(n => n.endsWith('.secrets.jsonl'))
    .flatMap(n => readFileSync(join(dir, n), 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l) as Secret))
  const index = new SecretIndex(secrets, literals)
  const result: DirScan = { files: 0, lines: 0, bytes: 0, secrets: index.size, hits: [] }
  for (const name of names.filter(n => n.endsWith('.log'))) {
    const text = readFileSync(join(dir, name), 'utf8')
    result.files++
    result.bytes += Buffer.byteLength(text)
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', nl + 1)) result.lines++
    result.hits.push(...scanText(text, index, name))
  }
  return result
}
