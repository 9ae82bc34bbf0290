import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * email_verification: one row per mailed verification link, found by the HMAC of its random token
 * (the token itself is never stored, so the table gives no working link). The row holds the
 * address the link was sent to: a change of address voids it. A user's expired rows go when a
 * new link is issued; all of them go with the user.
 */
export async function up (db: Kysely<any>): Promise<void> {
  const ts = isPostgres(db) ? 'timestamptz' : 'text'
  await db.schema.createTable('email_verification')
    .addColumn('token_hash', 'text', c => c.primaryKey())
    .addColumn('user_id', 'text', c => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('email', 'text', c => c.notNull())
    .addColumn('expires_at', sql.raw(ts), c => c.notNull())
    .addColumn('created_at', sql.raw(ts), c => c.notNull())
    .execute()
  await db.schema.createIndex('email_verification_user_idx').on('email_verification').columns(['user_id', 'expires_at']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('email_verification').execute()
}
