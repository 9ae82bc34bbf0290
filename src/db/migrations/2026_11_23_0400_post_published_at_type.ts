import type { Kysely } from 'kysely'

/**
 * post_published_at_idx gains type as a second column, so a list filtered by type counts its
 * scheduled posts (`published_at > now and type = ?`) from index entries alone.
 * Why: docs/decisions/0010-post-counter-slots.md
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('post_published_at_idx').execute()
  await db.schema.createIndex('post_published_at_idx').on('post').columns(['published_at', 'type']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('post_published_at_idx').execute()
  await db.schema.createIndex('post_published_at_idx').on('post').column('published_at').execute()
}
