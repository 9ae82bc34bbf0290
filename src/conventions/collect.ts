import type { FastifyInstance } from 'fastify'
import { sql, type Kysely } from 'kysely'
import { isPostgres } from '../db/dialect.js'
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
      routes.push({ method, url: route.url, schema: route.schema as Record<string, any> | undefined, config: route.config as Record<string, any> | undefined })
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
  const tables = await db.introspection.getTables()
  let schema: string | undefined
  if (isPostgres(db)) {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db)
    schema = rows[0]?.schema
  }
  return tables
    .filter(t => !t.isView && (schema === undefined || t.schema === schema))
    .map(t => ({ name: t.name, columns: t.columns.map(c => ({ name: c.name, dataType: c.dataType })) }))
}
