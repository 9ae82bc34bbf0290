import { createQueryId, type Compilable, type CompiledQuery } from 'kysely'
import { isPostgres, type Db, type Executor } from './dialect.js'

type Slot = { arg: number } | { value: unknown }

/**
 * A query of fixed shape, built and compiled once per dialect and then run with new values:
 * for a primary-key read, building and compiling cost more than the read itself. `build` is
 * called with placeholders (`$0`, `$1` …), each of which must appear as a value exactly where
 * its argument goes (not transformed): compiling checks that every one is there.
 */
export function compiledOnce<R, A extends unknown[]> (build: (db: Db, ...args: A) => Compilable<R>): (db: Executor, ...args: A) => Promise<R[]> {
  const byDialect = new Map<boolean, { compiled: CompiledQuery<R>, slots: Slot[] }>()
  return async (db, ...args) => {
    const postgres = isPostgres(db)
    let entry = byDialect.get(postgres)
    if (!entry) {
      const placeholders = args.map((_, i) => `\u0000$${i}`) as A
      const compiled = build(db as Db, ...placeholders).compile()
      const slots: Slot[] = compiled.parameters.map(value => {
        const arg = placeholders.indexOf(value as never)
        return arg === -1 ? { value } : { arg }
      })
      const missing = placeholders.filter((_, i) => !slots.some(s => 'arg' in s && s.arg === i))
      if (missing.length > 0) throw new Error(`compiledOnce: placeholder ${missing.join(', ')} is not a value of the query: ${compiled.sql}`)
      entry = { compiled, slots }
      byDialect.set(postgres, entry)
    }
    const { compiled, slots } = entry
    const parameters = slots.map(s => ('arg' in s ? args[s.arg] : s.value))
    const result = await db.executeQuery<R>({ ...compiled, parameters, queryId: createQueryId() })
    return result.rows
  }
}
