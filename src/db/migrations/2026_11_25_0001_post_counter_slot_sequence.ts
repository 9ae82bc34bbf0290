import { sql, type Kysely } from '../kysely.js'
import { isPostgres } from '../dialect.js'
import { NEXT_SLOT_BY_MAX, postCounterAdd } from './2026_11_23_0001_post_counter_slots.js'

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
