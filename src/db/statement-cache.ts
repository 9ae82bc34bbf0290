import { createQueryId, type Compilable, type CompiledQuery, type RawBuilder } from './kysely.js'
import { isPostgres, type Db, type Executor } from './dialect.js'

/** A query builder, or a `sql` template (compiled against the database) */
type Buildable<R> = Compilable<R> | RawBuilder<R>
type Slot = { name: string; index?: number } | { value: unknown }
interface Entry<R> {
  compiled: CompiledQuery<R>
  slots: Slot[]
}

/** The values a shaped query is run with: scalars and lists of scalars, by name. */
export type Values = Record<string, string | number | boolean | null | undefined | ReadonlyArray<string | number>>

// Shapes come from request parameters (sort orders, tag counts): a bound keeps a flood of odd ones from growing the map.
const SHAPES_PER_QUERY = 200

/**
 * A query built and compiled once per shape and dialect, then run with each call's values.
 * Why: docs/decisions/0005-statement-shapes.md
 *
 * `build` gets the shape and the values as placeholders: it must use every defined value untransformed
 * as a value of the query (compiling checks), and take the query's structure only from the shape and
 * which values are defined (null and undefined are part of the shape, as is each list's length).
 * `keyOf` names a shape, distinctly for shapes that build different queries (JSON by default).
 */
export function cachedStatementPerShape<R, S, V extends Values> (
  build: (db: Db, shape: S, values: V) => Buildable<R>,
  keyOf: (shape: S) => string = jsonKey
): (db: Executor, shape: S, values: V) => Promise<R[]> {
  const entries = new Map<string, Entry<R>>()
  return async (db, shape, values) => {
    const key = shapeKey(isPostgres(db), keyOf(shape), values)
    let entry = entries.get(key)
    if (!entry) {
      entry = compile(db as Db, shape, values, build)
      if (entries.size >= SHAPES_PER_QUERY) entries.delete(entries.keys().next().value!)
      entries.set(key, entry)
    }
    return run(
      db,
      entry.compiled,
      entry.slots.map(s => ('value' in s ? s.value : s.index === undefined ? values[s.name] : (values[s.name] as unknown[])[s.index]))
    )
  }
}

/** A query of one fixed shape whose values are its arguments, in order: `cachedStatement((db, id: string) => …)`. */
export function cachedStatement<R, A extends Array<string | number | boolean>> (
  build: (db: Db, ...args: A) => Buildable<R>
): (db: Executor, ...args: A) => Promise<R[]> {
  // The hot path of every read by key: no shape key, parameters straight from the arguments.
  const byDialect = new Map<boolean, { compiled: CompiledQuery<R>; slots: Array<{ arg: number } | { value: unknown }> }>()
  return async (db, ...args) => {
    const postgres = isPostgres(db)
    let entry = byDialect.get(postgres)
    if (!entry) {
      const { compiled, slots } = compile(db as Db, undefined, Object.fromEntries(args.map((v, i) => [i, v])), (d, _, v: Values) =>
        build(d, ...(Object.values(v) as A))
      )
      entry = { compiled, slots: slots.map(s => ('value' in s ? s : { arg: Number(s.name) })) }
      byDialect.set(postgres, entry)
    }
    return run(
      db,
      entry.compiled,
      entry.slots.map(s => ('value' in s ? s.value : args[s.arg]))
    )
  }
}

async function run<R> (db: Executor, compiled: CompiledQuery<R>, parameters: unknown[]): Promise<R[]> {
  return (await db.executeQuery<R>({ ...compiled, parameters, queryId: createQueryId() })).rows
}

function jsonKey (shape: unknown): string {
  return shape === undefined ? '' : JSON.stringify(shape)
}

function shapeKey (postgres: boolean, shape: string, values: Values): string {
  let key = `${postgres ? 'pg' : 'sqlite'}${shape}`
  for (const name in values) {
    const v = values[name]
    if (v === undefined) continue
    key += v === null ? `|${name}=null` : Array.isArray(v) ? `|${name}[${v.length}]` : `|${name}`
  }
  return key
}

function compile<R, S, V extends Values> (db: Db, shape: S, values: V, build: (db: Db, shape: S, values: V) => Buildable<R>): Entry<R> {
  const placeholders = new Map<string, Slot>()
  const stand = (name: string, index?: number) => {
    // both cases in it, so lower- or upper-casing a value is caught as well as any other change of it
    const placeholder = `\u0000Value:${name}${index === undefined ? '' : `.${index}`}`
    placeholders.set(placeholder, { name, index })
    return placeholder
  }
  const standIns: Values = {}
  for (const name in values) {
    const v = values[name]
    standIns[name] = v === undefined || v === null ? v : Array.isArray(v) ? v.map((_, i) => stand(name, i)) : stand(name)
  }
  const compiled = build(db, shape, standIns as V).compile(db) // a builder ignores the argument
  const slots = compiled.parameters.map(value => placeholders.get(value as string) ?? { value })
  const missing = [...placeholders.keys()].filter(p => !slots.includes(placeholders.get(p)!))
  if (missing.length > 0) throw new Error(`compiled query: placeholder ${missing.join(', ')} is not a value of the query: ${compiled.sql}`)
  return { compiled, slots }
}

/** cachedStatement for a read of one row at most (by key): the row, or undefined. */
export function cachedRowStatement<R, A extends Array<string | number | boolean>> (
  build: (db: Db, ...args: A) => Buildable<R>
): (db: Executor, ...args: A) => Promise<R | undefined> {
  const run = cachedStatement(build)
  return async (db, ...args) => (await run(db, ...args))[0]
}
