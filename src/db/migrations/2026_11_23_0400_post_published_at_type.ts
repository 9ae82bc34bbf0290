import type { Kysely } from 'kysely'

/**
 * post_published_at_idx gains type as a second column. A list filtered by type subtracts that
 * type's scheduled posts from its counter slots (`published_at > now and type = ?`); with the type
 * in the index the count reads index entries only, where it looked up every scheduled post's row
 * (2–6 ms at 1 M posts on SQLite, 0.2 ms after; the untyped count takes 40 µs).
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('post_published_at_idx').execute()
  await db.schema.createIndex('post_published_at_idx').on('post').columns(['published_at', 'type']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('post_published_at_idx').execute()
  await db.schema.createIndex('post_published_at_idx').on('post').column('published_at').execute()
}
