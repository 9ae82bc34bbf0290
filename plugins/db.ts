import { channel } from 'node:diagnostics_channel'
import fp from 'fastify-plugin'
import type { Kysely, LogEvent } from 'kysely'

/**
 * Filled in by the app with its database type, as @fastify/jwt's FastifyJWT is:
 * `declare module '../plugins/db.js' { interface DbTypes { db: Kysely<Database> } }`.
 */
export interface DbTypes {}

/** The app's database: what it names in DbTypes, else an untyped Kysely. */
export type AppDb = DbTypes extends { db: infer D extends Kysely<any> } ? D : Kysely<any>

declare module 'fastify' {
  interface FastifyInstance {
    db: AppDb
    /** true when the database answers a trivial query */
    dbHealthy: () => Promise<boolean>
  }
}

/** Published after every query, ok or failed: metrics and tracing subscribe (nothing is done without a subscriber). */
export interface QueryMessage {
  /** the app's database, so one process's apps (tests) keep their numbers apart */
  db: AppDb
  event: LogEvent
}
export const queryChannel = channel('roja:db:query')

export interface DbPluginOptions {
  /** opens the database, calling `log` after every query (Kysely's `log` option) */
  connect: (log: (event: LogEvent) => void) => AppDb
  /** brings the schema up to date and returns the migrations it applied; without it nothing is migrated */
  migrate?: (db: AppDb) => Promise<string[]>
}

/** `fastify.db`, opened by the app's `connect`, migrated at start and destroyed on close. */
export default fp<DbPluginOptions>(async (fastify, opts) => {
  const db: AppDb = opts.connect((event) => {
    if (queryChannel.hasSubscribers) queryChannel.publish({ db, event } satisfies QueryMessage)
  })
  fastify.addHook('onClose', async () => { await db.destroy() })
  if (opts.migrate) {
    const applied = await opts.migrate(db)
    if (applied.length > 0) fastify.log.info({ applied }, 'migrations applied')
  }
  fastify.decorate('db', db)
  fastify.decorate('dbHealthy', async () => {
    try {
      await db.selectNoFrom(eb => eb.lit(1).as('ok')).execute()
      return true
    } catch {
      return false
    }
  })
}, { name: 'db' })
