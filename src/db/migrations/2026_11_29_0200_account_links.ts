import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

/**
 * password_reset: one row per mailed password-reset link, found by the HMAC of its random token
 * (the token itself is never stored). A user has at most one live link: issuing a new one, using
 * one, or changing the password removes the others; all of them go with the user.
 *
 * email_verification.purpose: `verify` (the account's own address, as before) or `change` (a new
 * address the owner asked for; confirming the link makes it the account's address).
 */
export async function up (db: Kysely<any>): Promise<void> {
  const ts = db.getExecutor().adapter instanceof PostgresAdapter ? 'timestamptz' : 'text'
  await db.schema.createTable('password_reset')
    .addColumn('token_hash', 'text', c => c.primaryKey())
    .addColumn('user_id', 'text', c => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('expires_at', sql.raw(ts), c => c.notNull())
    .addColumn('created_at', sql.raw(ts), c => c.notNull())
    .execute()
  await db.schema.createIndex('password_reset_user_idx').on('password_reset').column('user_id').execute()
  await db.schema.alterTable('email_verification')
    .addColumn('purpose', 'text', c => c.notNull().defaultTo('verify'))
    .execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('email_verification').dropColumn('purpose').execute()
  await db.schema.dropTable('password_reset').execute()
}
