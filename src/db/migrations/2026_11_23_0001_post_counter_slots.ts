import { sql, type Kysely } from '../kysely.js'
import { isPostgres } from '../dialect.js'
import * as dataVersion from './2026_11_21_0004_data_version.js'
import * as postCounter from './2026_11_21_0002_post_counter.js'

/** The new slot's number as this migration chose it (2026_11_25_0001 takes it from a sequence). */
export const NEXT_SLOT_BY_MAX = '(select coalesce(max(slot), -1) + 1 from post_counter where type = t)'

/** post_counter_add(type, n): adds n to a slot of the type that no open transaction holds. */
export function postCounterAdd (nextSlot: string): string {
  return `create or replace function post_counter_add(t text, n bigint) returns void language plpgsql as $$
      declare s integer;
      begin
        select slot into s from post_counter where type = t limit 1 for update skip locked;
        if found then
          update post_counter set published = published + n where type = t and slot = s;
        else
          -- every slot is held by an open writer (or the type is new): open another one
          insert into post_counter (type, slot, published)
            values (t, ${nextSlot}, n)
            on conflict (type, slot) do update set published = post_counter.published + excluded.published;
        end if;
      end $$`
}

/**
 * post_counter becomes slots per type whose sum is the number of the type's posts with a
 * published_at, in every snapshot: a PostgreSQL writer adds to a slot no other open transaction
 * holds (FOR UPDATE SKIP LOCKED), or opens one, so writers never queue on one row. data_version,
 * one row every post write updated, goes with the cache it served.
 * Why: docs/decisions/0010-post-counter-slots.md
 */
export async function up (db: Kysely<any>): Promise<void> {
  await dataVersion.down(db)
  await postCounter.down(db)
  await db.schema.createTable('post_counter')
    .addColumn('type', 'text', c => c.notNull())
    .addColumn('slot', 'integer', c => c.notNull())
    .addColumn('published', 'bigint', c => c.notNull())
    .addPrimaryKeyConstraint('post_counter_pkey', ['type', 'slot'])
    .execute()
  await sql`insert into post_counter (type, slot, published)
    select type, 0, count(*) from post where published_at is not null group by type`.execute(db)
  await db.schema.createIndex('post_published_at_idx').on('post').column('published_at').execute()

  if (isPostgres(db)) {
    await sql.raw(postCounterAdd(NEXT_SLOT_BY_MAX)).execute(db)
    // Statement-level triggers with transition tables: one counter change per type and statement.
    for (const [event, refs, changes] of [
      ['insert', 'new table as new_rows', 'select type, count(*) as n from new_rows where published_at is not null group by type'],
      ['delete', 'old table as old_rows', 'select type, -count(*) as n from old_rows where published_at is not null group by type'],
      ['update', 'old table as old_rows new table as new_rows', `select type, sum(n) as n from (
          select type, 1 as n from new_rows where published_at is not null
          union all select type, -1 as n from old_rows where published_at is not null) d group by type having sum(n) <> 0`]
    ]) {
      await sql.raw(`create function post_counter_${event}() returns trigger language plpgsql as $$
        declare r record;
        begin
          for r in ${changes} loop perform post_counter_add(r.type, r.n); end loop;
          return null;
        end $$`).execute(db)
      await sql.raw(`create trigger post_counter_${event} after ${event} on post
        referencing ${refs} for each statement execute function post_counter_${event}()`).execute(db)
    }
    return
  }

  // SQLite lets one writer in at a time whatever the rows, so one slot per type is all it needs.
  const add = (row: 'new' | 'old', n: 1 | -1) => `insert into post_counter (type, slot, published)
      select ${row}.type, 0, ${n} where ${row}.published_at is not null
      on conflict (type, slot) do update set published = published + ${n};`
  await sql.raw(`create trigger post_counter_insert after insert on post begin ${add('new', 1)} end`).execute(db)
  await sql.raw(`create trigger post_counter_delete after delete on post begin ${add('old', -1)} end`).execute(db)
  await sql.raw(`create trigger post_counter_update after update of type, published_at on post begin
      ${add('old', -1)} ${add('new', 1)} end`).execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  for (const event of ['insert', 'delete', 'update']) {
    await sql.raw(`drop trigger if exists post_counter_${event}${isPostgres(db) ? ' on post' : ''}`).execute(db)
    if (isPostgres(db)) await sql.raw(`drop function if exists post_counter_${event}()`).execute(db)
  }
  if (isPostgres(db)) await sql.raw('drop function if exists post_counter_add(text, bigint)').execute(db)
  await db.schema.dropIndex('post_published_at_idx').ifExists().execute()
  await db.schema.dropTable('post_counter').ifExists().execute()
  await postCounter.up(db)
  await dataVersion.up(db)
}
