import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * user.email_verified_at: when the owner proved the address is theirs (null: not yet). Existing
 * accounts start unverified, the safe side: Roja mails them nothing but a verification link
 * until they confirm one, since no address was ever checked before this.
 */
export async function up (db: Kysely<any>): Promise<void> {
  const ts = isPostgres(db) ? 'timestamptz' : 'text'
  await db.schema.alterTable('user').addColumn('email_verified_at', sql.raw(ts)).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('email_verified_at').execute()
}
