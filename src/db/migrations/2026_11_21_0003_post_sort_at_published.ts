import type { Kysely } from 'kysely'

/**
 * post_sort_at_idx gains published_at as a third key column. Scheduled posts have a sort_at in
 * the future, so they sit at the head of the index and every first page walked past them with
 * a table lookup each (at 1 M posts with 5 000 scheduled, 46 req/s on SQLite). With published_at
 * in the index, `published_at <= now` is checked on the index entry itself, and the page reads
 * only the rows it returns. The order (sort_at desc, id desc) and the name stay, so keyset
 * cursors and the plans in bench/history/README.md are unchanged.
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('post_sort_at_idx').execute()
  await db.schema.createIndex('post_sort_at_idx').on('post').columns(['sort_at desc', 'id desc', 'published_at']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('post_sort_at_idx').execute()
  await db.schema.createIndex('post_sort_at_idx').on('post').columns(['sort_at desc', 'id desc']).execute()
}
