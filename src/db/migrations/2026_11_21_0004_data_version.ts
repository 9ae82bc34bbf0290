import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * data_version: a number per cached read, bumped by triggers in the same transaction as every
 * write that can change what that read shows, whoever writes (the API on any instance, the
 * seeder, cascades, hand-run SQL). `post_list` covers the public post lists: post rows, and the
 * author's username and names they embed. A reader that sees the same number sees the same data.
 */
const TRIGGERS = [
  // [trigger, table, event]; on PostgreSQL `post_bump_*` sorts before post_counter_*, so every
  // post write takes the version row before a counter row, always in that order (no deadlock).
  ['post_bump_list_version', 'post', 'insert or update or delete'],
  ['user_bump_list_version', 'user', 'update of username'],
  ['profile_bump_list_version', 'profile', 'update of first_name, last_name']
] as const

export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('data_version')
    .addColumn('name', 'text', c => c.primaryKey())
    .addColumn('version', 'bigint', c => c.notNull())
    .execute()
  await db.insertInto('data_version').values({ name: 'post_list', version: 0 }).execute()
  const bump = "update data_version set version = version + 1 where name = 'post_list'"

  if (isPostgres(db)) {
    // Statement triggers: one bump per statement, so a seeder's 1000-row INSERT costs one update.
    await sql.raw(`create function bump_post_list_version() returns trigger language plpgsql as $$
      begin ${bump}; return null; end $$`).execute(db)
    for (const [name, table, event] of TRIGGERS) {
      await sql.raw(`create trigger ${name} after ${event} on "${table}"
        for each statement execute function bump_post_list_version()`).execute(db)
    }
    return
  }
  // SQLite has row triggers only, and one per event.
  for (const [name, table, events] of TRIGGERS) {
    for (const event of events.split(' or ')) {
      await sql.raw(`create trigger ${name}_${event.split(' ')[0]} after ${event} on "${table}" begin ${bump}; end`).execute(db)
    }
  }
}

export async function down (db: Kysely<any>): Promise<void> {
  for (const [name, table, events] of TRIGGERS) {
    if (isPostgres(db)) await sql.raw(`drop trigger if exists ${name} on "${table}"`).execute(db)
    else for (const event of events.split(' or ')) await sql.raw(`drop trigger if exists ${name}_${event.split(' ')[0]}`).execute(db)
  }
  if (isPostgres(db)) await sql.raw('drop function if exists bump_post_list_version()').execute(db)
  await db.schema.dropTable('data_version').ifExists().execute()
}
