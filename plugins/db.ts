import { channel } from 'node:diagnostics_channel'
import fp from 'fastify-plugin'
import { sql, type LogEvent } from '../src/db/kysely.js'
import { createDb, type Db, type DbOptions } from '../src/db/dialect.js'
import { migrateToLatest } from '../src/db/migrate.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    /** true when the database answers a trivial query */
    dbHealthy: () => Promise<boolean>
  }
}

/** Published after every query, ok or failed: metrics and tracing subscribe (nothing is done without a subscriber). */
export interface QueryMessage {
  /** the app's database, so one process's apps (tests) keep their numbers apart */
  db: Db
  event: LogEvent
}
export const queryChannel = channel('roja:db:query')

export interface DbPluginOptions extends DbOptions {
  url: string
  migrate?: boolean
}

export default fp<DbPluginOptions>(async (fastify, opts) => {
  const db: Db = createDb(opts.url, {
    ...opts,
    log: (event) => { if (queryChannel.hasSubscribers) queryChannel.publish({ db, event } satisfies QueryMessage) }
  })
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
