import type { FastifyInstance } from 'fastify'
import { sql, type Kysely } from '../../src/db/kysely.js'
import { isPostgres } from '../../src/db/dialect.js'
import type { RouteInfo, SchemaMap, TableInfo } from './check.js'

/**
 * Records the route table as routes are added. Call it on the root instance before the
 * route groups are registered (onRoute hooks only see later routes).
 */
export function collectRoutes (fastify: FastifyInstance): RouteInfo[] {
  const routes: RouteInfo[] = []
  const seen = new Set<string>()
  fastify.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      // HEAD routes are Fastify's automatic twins of GET routes.
      if (method === 'HEAD') continue
      const key = `${method} ${route.url.replace(/\/+$/, '') || '/'}`
      if (seen.has(key)) continue // a prefix gives `/x` and `/x/`
      seen.add(key)
      // read when checked: later onRoute hooks replace or complete a route's schema
      routes.push({
        method,
        url: route.url,
        get schema () { return route.schema as Record<string, any> | undefined },
        get config () { return route.config as Record<string, any> | undefined }
      })
    }
  })
  return routes
}

/** The named schemas added with addSchema, by $id. */
export function collectSchemas (fastify: FastifyInstance): SchemaMap {
  return fastify.getSchemas() as SchemaMap
}

/** The tables and columns of the current database (its current schema on PostgreSQL). */
export async function collectTables (db: Kysely<any>): Promise<TableInfo[]> {
  if (!isPostgres(db)) {
    const tables = await db.introspection.getTables()
    return tables.filter(t => !t.isView).map(t => ({ name: t.name, columns: t.columns.map(c => ({ name: c.name, dataType: c.dataType })) }))
  }
  // Kysely's introspection reads every schema, and tests drop theirs concurrently: ask for ours only.
  const { rows } = await sql<{ table_name: string, column_name: string, data_type: string }>`
    select c.table_name, c.column_name, c.udt_name as data_type
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and t.table_type = 'BASE TABLE' and left(c.table_name, 7) <> 'kysely_'
    order by c.table_name, c.ordinal_position`.execute(db)
  const tables = new Map<string, TableInfo>()
  for (const row of rows) {
    const table = tables.get(row.table_name) ?? { name: row.table_name, columns: [] }
    table.columns.push({ name: row.column_name, dataType: row.data_type })
    tables.set(row.table_name, table)
  }
  return [...tables.values()]
}
