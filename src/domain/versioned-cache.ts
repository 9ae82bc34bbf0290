import { sql } from 'kysely'
import type { Executor } from '../db/dialect.js'

interface Filled<T> { value: T, until: number, weight: number }
interface Entry<T> extends Filled<T> { version: string }

/**
 * Repeat reads answered from memory, and exact across instances: every lookup first reads its
 * data_version row (one primary-key read; triggers bump it in the same transaction as any write
 * that changes the read, see migration 0004), and a changed version refills. The version is read
 * before the fill, so a write landing during a fill can only make the entry refill once more,
 * never stay stale. Least recently used entries go first once `maxWeight` is held.
 */
export class VersionedCache<T> {
  readonly #entries = new Map<string, Entry<T>>()
  readonly #pending = new Map<string, { version: string, filled: Promise<Filled<T>> }>()
  #weight = 0

  constructor (private readonly name: string, private readonly maxWeight: number) {}

  /**
   * The value for `key`: cached while the version holds and the clock is before the `until` the
   * fill gave (a time the answer changes without a write: a scheduled post coming due).
   * `weight` (e.g. characters held) keeps memory bounded.
   */
  async get (db: Executor, key: string, now: number, fill: () => Promise<Filled<T>>): Promise<T> {
    const version = await readVersion(db, this.name)
    const hit = this.#entries.get(key)
    if (hit && hit.version === version && now < hit.until) {
      this.#entries.delete(key) // re-insert: Map order is the recency order
      this.#entries.set(key, hit)
      return hit.value
    }
    // Misses of one key and version share one fill: after a write, the requests waiting on the
    // page do not all read it again. The fill began after this version was read, so it is fresh enough.
    const pending = this.#pending.get(key)
    if (pending?.version === version) {
      const { value, until } = await pending.filled
      // A scheduled post came due after the shared fill took its clock: this request reads for itself.
      return now < until ? value : (await fill()).value
    }
    const mine = { version, filled: this.#fill(key, version, fill) }
    this.#pending.set(key, mine)
    const done = () => { if (this.#pending.get(key) === mine) this.#pending.delete(key) }
    mine.filled.then(done, done)
    return (await mine.filled).value
  }

  async #fill (key: string, version: string, fill: () => Promise<Filled<T>>): Promise<Filled<T>> {
    const filled = await fill()
    this.#drop(key)
    if (filled.weight <= this.maxWeight) {
      this.#entries.set(key, { version, until: filled.until, weight: filled.weight, value: filled.value })
      this.#weight += filled.weight
      for (const oldest of this.#entries.keys()) {
        if (this.#weight <= this.maxWeight) break
        this.#drop(oldest)
      }
    }
    return filled
  }

  #drop (key: string): void {
    const entry = this.#entries.get(key)
    if (!entry) return
    this.#weight -= entry.weight
    this.#entries.delete(key)
  }
}

/** One cache per database handle (each app has its own, and so each test), made on first use. */
export function cachePerDatabase<T> (name: string, maxWeight: number): (db: Executor) => VersionedCache<T> {
  const caches = new WeakMap<Executor, VersionedCache<T>>()
  return (db) => {
    let cache = caches.get(db)
    if (!cache) caches.set(db, cache = new VersionedCache<T>(name, maxWeight))
    return cache
  }
}

async function readVersion (db: Executor, name: string): Promise<string> {
  const { rows } = await sql<{ version: number | string }>`select version from data_version where name = ${name}`.execute(db)
  return String(rows[0]?.version)
}
