import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * comment_author_idx: a person's comments, which the end of an account removes (the foreign key
 * cascades from user): without it, every account deleted reads every comment. Expand: an index
 * changes no answer. On PostgreSQL it is built CONCURRENTLY, so writes go on meanwhile; that cannot run in a
 * transaction, and a build that stopped midway leaves an invalid index, dropped here before trying again.
 * CONCURRENTLY waits for every transaction open in the database: on an empty table (a new database)
 * there is nothing to build while writes wait, and the plain build waits for none.
 */
export const kind = 'expand'
export const transaction = false

export async function up (db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) {
    await sql`create index if not exists comment_author_idx on comment (author_id)`.execute(db)
    return
  }
  const { rows } = await sql<{ valid: boolean }>`select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
    where c.relname = 'comment_author_idx' and c.relnamespace = current_schema()::regnamespace`.execute(db)
  if (rows[0]?.valid === false) await sql`drop index concurrently comment_author_idx`.execute(db)
  const { rows: [{ empty }] } = await sql<{ empty: boolean }>`select not exists (select 1 from comment) as empty`.execute(db)
  if (empty) await sql`create index if not exists comment_author_idx on comment (author_id)`.execute(db)
  else await sql`create index concurrently if not exists comment_author_idx on comment (author_id)`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  await sql`drop index if exists comment_author_idx`.execute(db)
}
