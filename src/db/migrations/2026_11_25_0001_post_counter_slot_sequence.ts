import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

// Copied from 2026_11_23_0001 as it ran: its slot choice (down restores it) and its function's text.
/** The new slot's number as 2026_11_23_0001 chose it: max(slot) + 1. */
const NEXT_SLOT_BY_MAX = '(select coalesce(max(slot), -1) + 1 from post_counter where type = t)'

/** post_counter_add(type, n): adds n to a slot of the type that no open transaction holds. */
function postCounterAdd (nextSlot: string): string {
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
 * A new post_counter slot takes its number from a sequence: with max(slot) + 1, two writers that
 * found every slot held chose the same number and the second waited on the first; nextval never
 * waits. SQLite keeps one slot per type: nothing to do. Why: docs/decisions/0010-post-counter-slots.md
 */
export async function up (db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  // slots count from 0, as before; the first nextval is the lowest number no slot has
  await sql`create sequence post_counter_slot_seq minvalue 0`.execute(db)
  await sql`select setval('post_counter_slot_seq', (select coalesce(max(slot), -1) + 1 from post_counter), false)`.execute(db)
  await sql.raw(postCounterAdd("nextval('post_counter_slot_seq')::integer")).execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return
  await sql.raw(postCounterAdd(NEXT_SLOT_BY_MAX)).execute(db)
  await sql`drop sequence post_counter_slot_seq`.execute(db)
}
