import type { Kysely } from 'kysely'

/**
 * post_sort_at_idx gains published_at as a third key column, so the scheduled posts at its head
 * are passed over on the index entry, not looked up row by row. The order and the name stay, so
 * keyset cursors are unchanged. Why: docs/decisions/0009-deep-pages-by-key.md
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('post_sort_at_idx').execute()
  await db.schema.createIndex('post_sort_at_idx').on('post').columns(['sort_at desc', 'id desc', 'published_at']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('post_sort_at_idx').execute()
  await db.schema.createIndex('post_sort_at_idx').on('post').columns(['sort_at desc', 'id desc']).execute()
}
