import { sql, type Kysely } from '../kysely.js'

/**
 * roja_migration_kind: each migration from this one on records whether it is `expand` (adds only
 * what the previous release can ignore) or `contract`. A release that finds migrations it does not
 * know reads their kinds here: all expand, it serves; otherwise it refuses to start.
 */
export const kind = 'expand'

export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('roja_migration_kind')
    .addColumn('name', 'text', c => c.primaryKey())
    .addColumn('kind', 'text', c => c.notNull().check(sql`kind in ('expand', 'contract')`))
    .execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('roja_migration_kind').execute()
}
