import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * media_upload: the bytes an upload in progress holds against its owner's quota, so two uploads
 * at once cannot both fit into the same room. A row lives while its upload streams; one left by a
 * process that died stops counting at expires_at. media(owner_id, created_at) serves the quota's
 * sum and the owner's own list.
 */
export async function up (db: Kysely<any>): Promise<void> {
  const ts = isPostgres(db) ? 'timestamptz' : 'text'
  await db.schema.createTable('media_upload')
    .addColumn('id', 'text', c => c.primaryKey())
    .addColumn('owner_id', 'text', c => c.notNull().references('user.id').onDelete('cascade'))
    .addColumn('reserved_bytes', 'bigint', c => c.notNull())
    .addColumn('expires_at', sql.raw(ts), c => c.notNull())
    .execute()
  await db.schema.createIndex('media_upload_owner_idx').on('media_upload').columns(['owner_id', 'expires_at']).execute()
  await db.schema.createIndex('media_owner_created_idx').on('media').columns(['owner_id', 'created_at desc', 'id desc']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('media_owner_created_idx').execute()
  await db.schema.dropTable('media_upload').execute()
}
