import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

// A post's UTC day as YYYY-MM-DD text (sorts as it reads), and the start of the writer's next UTC day.
const PG_DAY = "to_char(published_at at time zone 'UTC', 'YYYY-MM-DD')"
const PG_TOMORROW = "date_trunc('day', clock_timestamp(), 'UTC') + interval '1 day'"
const SQLITE_TOMORROW = "date('now', '+1 day')"

/**
 * post_schedule counts, per UTC day and type, the posts written to be published on a later day
 * than the one they were written on. A reader counts its scheduled posts from the index up to the
 * day after tomorrow and from these rows beyond, so the exact total no longer grows with the number
 * of scheduled posts. A row for a day that has come is never read again. Kept by triggers, whoever
 * writes. Why: docs/decisions/0010-post-counter-slots.md
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('post_schedule')
    .addColumn('day', 'text', c => c.notNull())
    .addColumn('type', 'text', c => c.notNull())
    .addColumn('scheduled', 'bigint', c => c.notNull())
    .addPrimaryKeyConstraint('post_schedule_pkey', ['day', 'type'])
    .execute()

  if (isPostgres(db)) {
    await sql.raw(`insert into post_schedule (day, type, scheduled)
      select ${PG_DAY}, type, count(*) from post where published_at >= ${PG_TOMORROW} group by 1, 2`).execute(db)
    const later = (rows: string, n: string) => `select ${PG_DAY} as day, type, ${n} as n from ${rows} where published_at >= tomorrow`
    // Statement triggers with transition tables, as post_counter's; buckets in key order, so two writers lock them in the same order.
    for (const [event, refs, changes] of [
      ['insert', 'new table as new_rows', later('new_rows', '1')],
      ['delete', 'old table as old_rows', later('old_rows', '-1')],
      ['update', 'old table as old_rows new table as new_rows', `${later('new_rows', '1')} union all ${later('old_rows', '-1')}`]
    ]) {
      await sql.raw(`create function post_schedule_${event}() returns trigger language plpgsql as $$
        declare tomorrow timestamptz := ${PG_TOMORROW};
        begin
          insert into post_schedule (day, type, scheduled)
            select day, type, sum(n) from (${changes}) d group by day, type having sum(n) <> 0 order by day, type
            on conflict (day, type) do update set scheduled = post_schedule.scheduled + excluded.scheduled;
          return null;
        end $$`).execute(db)
      await sql.raw(`create trigger post_schedule_${event} after ${event} on post
        referencing ${refs} for each statement execute function post_schedule_${event}()`).execute(db)
    }
    return
  }

  // SQLite stores published_at as ISO text, so its first ten characters are the UTC day.
  await sql.raw(`insert into post_schedule (day, type, scheduled)
    select substr(published_at, 1, 10), type, count(*) from post where published_at >= ${SQLITE_TOMORROW} group by 1, 2`).execute(db)
  const add = (row: 'new' | 'old', n: 1 | -1) => `insert into post_schedule (day, type, scheduled)
      select substr(${row}.published_at, 1, 10), ${row}.type, ${n} where ${row}.published_at >= ${SQLITE_TOMORROW}
      on conflict (day, type) do update set scheduled = scheduled + ${n};`
  await sql.raw(`create trigger post_schedule_insert after insert on post begin ${add('new', 1)} end`).execute(db)
  await sql.raw(`create trigger post_schedule_delete after delete on post begin ${add('old', -1)} end`).execute(db)
  await sql.raw(`create trigger post_schedule_update after update of type, published_at on post begin
      ${add('old', -1)} ${add('new', 1)} end`).execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  for (const event of ['insert', 'delete', 'update']) {
    await sql.raw(`drop trigger if exists post_schedule_${event}${isPostgres(db) ? ' on post' : ''}`).execute(db)
    if (isPostgres(db)) await sql.raw(`drop function if exists post_schedule_${event}()`).execute(db)
  }
  await db.schema.dropTable('post_schedule').ifExists().execute()
}
