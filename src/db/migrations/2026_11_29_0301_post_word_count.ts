import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * post.word_count: the number of words in the body, which posts now show. Expand: the previous
 * release neither reads nor writes it, and its posts written during a rolling upgrade keep a null
 * that the new release counts on read (src/domain/posts.ts) until a later contract release fills
 * the rest and makes the column NOT NULL.
 *
 * Outside a transaction: the backfill commits a batch at a time, so on a large table no write waits
 * for it and a start that stops midway goes on where it stopped. Safe to run again from the start.
 */
export const kind = 'expand'
export const transaction = false

const BATCH = 500

/** Words as this migration counts them: runs of anything but white space (as the release that added it did). */
const words = (body: string) => body.split(/\s+/).filter(w => w !== '').length

export async function up (db: Kysely<any>): Promise<void> {
  const columns = isPostgres(db)
    ? (await sql<{ name: string }>`select column_name as name from information_schema.columns
        where table_schema = current_schema() and table_name = 'post'`.execute(db)).rows
    : (await sql<{ name: string }>`select name from pragma_table_info('post')`.execute(db)).rows
  if (!columns.some(c => c.name === 'word_count')) await db.schema.alterTable('post').addColumn('word_count', 'integer').execute()

  for (;;) {
    const rows = await db.selectFrom('post').select(['id', 'body']).where('word_count', 'is', null).limit(BATCH).execute()
    if (rows.length === 0) break
    const count = sql.join(rows.map(r => sql`when ${r.id} then cast(${words(r.body)} as integer)`), sql` `)
    await sql`update post set word_count = case id ${count} end
      where id in (${sql.join(rows.map(r => r.id))}) and word_count is null`.execute(db)
    if (rows.length < BATCH) break
  }
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('post').dropColumn('word_count').execute()
}
