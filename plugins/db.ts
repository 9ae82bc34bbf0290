import fp from 'fastify-plugin'
import { sql } from 'kysely'
import { createDb, type Db, type DbOptions } from '../src/db/dialect.js'
import { migrateToLatest } from '../src/db/migrate.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    /** true when the database answers a trivial query */
    dbHealthy: () => Promise<boolean>
  }
}

export interface DbPluginOptions extends DbOptions {
  url: string
  migrate?: boolean
}

export default fp<DbPluginOptions>(async (fastify, opts) => {
  const db = createDb(opts.url, opts)
  fastify.addHook('onClose', async () => { await db.destroy() })
  if (opts.migrate !== false) {
    const applied = await migrateToLatest(db)
    if (applied.length > 0) fastify.log.info({ applied }, 'migrations applied')
  }
  fastify.decorate('db', db)
  fastify.decorate('dbHealthy', async () => {
    try {
      await sql`select 1`.execute(db)
      return true
    } catch {
      return false
    }
  })
}, { name: 'db' })
