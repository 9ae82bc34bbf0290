import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * post_counter: per post type, how many posts have a published_at (published or scheduled),
 * kept by triggers so every write path (the API, the seeder, foreign-key cascades, a hand-run
 * INSERT) updates it in the same transaction. The public total is then this sum minus the
 * scheduled posts (published_at > now: a range scan of post_published_at_idx), never a full count.
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('post_counter')
    .addColumn('type', 'text', c => c.primaryKey())
    .addColumn('published', 'bigint', c => c.notNull())
    .execute()
  await sql`insert into post_counter (type, published)
    select type, count(*) from post where published_at is not null group by type`.execute(db)
  await db.schema.createIndex('post_published_at_idx').on('post').column('published_at').execute()

  if (isPostgres(db)) {
    // Statement-level triggers with transition tables: one counter update per statement, so a
    // seeder's 1000-row INSERT costs one update, not a thousand.
    // A transition table exists only for the events that have it, so each event gets its own function body.
    for (const [event, refs] of [
      ['insert', 'new table as new_rows'],
      ['delete', 'old table as old_rows'],
      ['update', 'old table as old_rows new table as new_rows']
    ]) {
      const body =
        event === 'insert'
          ? 'select type, count(*) from new_rows where published_at is not null group by type'
          : event === 'delete'
            ? 'select type, -count(*) from old_rows where published_at is not null group by type'
            : `select type, sum(n) from (select type, 1 as n from new_rows where published_at is not null
              union all select type, -1 as n from old_rows where published_at is not null) d group by type having sum(n) <> 0`
      await sql
        .raw(
          `create function post_counter_${event}() returns trigger language plpgsql as $$
        begin
          insert into post_counter (type, published) ${body}
          on conflict (type) do update set published = post_counter.published + excluded.published;
          return null;
        end $$`
        )
        .execute(db)
      await sql
        .raw(
          `create trigger post_counter_${event} after ${event} on post
        referencing ${refs} for each statement execute function post_counter_${event}()`
        )
        .execute(db)
    }
    return
  }

  // SQLite has row triggers only; one upsert of a one-row table per changed post is cheap.
  const add = (row: 'new' | 'old', n: 1 | -1) => `insert into post_counter (type, published)
      select ${row}.type, ${n} where ${row}.published_at is not null
      on conflict (type) do update set published = published + ${n};`
  await sql.raw(`create trigger post_counter_insert after insert on post begin ${add('new', 1)} end`).execute(db)
  await sql.raw(`create trigger post_counter_delete after delete on post begin ${add('old', -1)} end`).execute(db)
  await sql
    .raw(
      `create trigger post_counter_update after update of type, published_at on post begin
      ${add('old', -1)} ${add('new', 1)} end`
    )
    .execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  for (const event of ['insert', 'delete', 'update']) {
    await sql.raw(`drop trigger if exists post_counter_${event}${isPostgres(db) ? ' on post' : ''}`).execute(db)
    if (isPostgres(db)) await sql.raw(`drop function if exists post_counter_${event}()`).execute(db)
  }
  await db.schema.dropIndex('post_published_at_idx').ifExists().execute()
  await db.schema.dropTable('post_counter').ifExists().execute()
}
