import { PostgresAdapter, sql, type Kysely } from '../kysely.js'

// This migration's own dialect check: a migration imports nothing but Kysely (test/migrations.test.ts).
const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter

/** The new slot's number as this migration chose it (2026_11_25_0001 takes it from a sequence). */
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
 * post_counter becomes slots per type whose sum is the number of the type's posts with a
 * published_at, in every snapshot: a PostgreSQL writer adds to a slot no other open transaction
 * holds (FOR UPDATE SKIP LOCKED), or opens one, so writers never queue on one row. data_version,
 * one row every post write updated, goes with the cache it served.
 * Why: docs/decisions/0010-post-counter-slots.md
 */
export async function up (db: Kysely<any>): Promise<void> {
  await dropDataVersion(db)
  await dropOneRowCounter(db)
  await db.schema
    .createTable('post_counter')
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
      [
        'update',
        'old table as old_rows new table as new_rows',
        `select type, sum(n) as n from (
          select type, 1 as n from new_rows where published_at is not null
          union all select type, -1 as n from old_rows where published_at is not null) d group by type having sum(n) <> 0`
      ]
    ]) {
      await sql
        .raw(
          `create function post_counter_${event}() returns trigger language plpgsql as $$
        declare r record;
        begin
          for r in ${changes} loop perform post_counter_add(r.type, r.n); end loop;
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

  // SQLite lets one writer in at a time whatever the rows, so one slot per type is all it needs.
  const add = (row: 'new' | 'old', n: 1 | -1) => `insert into post_counter (type, slot, published)
      select ${row}.type, 0, ${n} where ${row}.published_at is not null
      on conflict (type, slot) do update set published = published + ${n};`
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
  if (isPostgres(db)) await sql.raw('drop function if exists post_counter_add(text, bigint)').execute(db)
  await db.schema.dropIndex('post_published_at_idx').ifExists().execute()
  await db.schema.dropTable('post_counter').ifExists().execute()
  await createOneRowCounter(db)
  await createDataVersion(db)
}

// What this migration replaces, as 2026_11_21_0002 and 2026_11_21_0004 built and dropped it, copied
// here so that the migration stays what it was whatever happens to those files.

/** 2026_11_21_0002's up: post_counter as one row per type. */
async function createOneRowCounter (db: Kysely<any>): Promise<void> {
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

/** 2026_11_21_0002's down. */
async function dropOneRowCounter (db: Kysely<any>): Promise<void> {
  for (const event of ['insert', 'delete', 'update']) {
    await sql.raw(`drop trigger if exists post_counter_${event}${isPostgres(db) ? ' on post' : ''}`).execute(db)
    if (isPostgres(db)) await sql.raw(`drop function if exists post_counter_${event}()`).execute(db)
  }
  await db.schema.dropIndex('post_published_at_idx').ifExists().execute()
  await db.schema.dropTable('post_counter').ifExists().execute()
}

const DATA_VERSION_TRIGGERS = [
  // [trigger, table, event]; on PostgreSQL `post_bump_*` sorts before post_counter_*, so every
  // post write takes the version row before a counter row, always in that order (no deadlock).
  ['post_bump_list_version', 'post', 'insert or update or delete'],
  ['user_bump_list_version', 'user', 'update of username'],
  ['profile_bump_list_version', 'profile', 'update of first_name, last_name']
] as const

/** 2026_11_21_0004's up: data_version and its triggers. */
async function createDataVersion (db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('data_version')
    .addColumn('name', 'text', c => c.primaryKey())
    .addColumn('version', 'bigint', c => c.notNull())
    .execute()
  await db.insertInto('data_version').values({ name: 'post_list', version: 0 }).execute()
  const bump = "update data_version set version = version + 1 where name = 'post_list'"

  if (isPostgres(db)) {
    // Statement triggers: one bump per statement, so a seeder's 1000-row INSERT costs one update.
    await sql
      .raw(
        `create function bump_post_list_version() returns trigger language plpgsql as $$
      begin ${bump}; return null; end $$`
      )
      .execute(db)
    for (const [name, table, event] of DATA_VERSION_TRIGGERS) {
      await sql
        .raw(
          `create trigger ${name} after ${event} on "${table}"
        for each statement execute function bump_post_list_version()`
        )
        .execute(db)
    }
    return
  }
  // SQLite has row triggers only, and one per event.
  for (const [name, table, events] of DATA_VERSION_TRIGGERS) {
    for (const event of events.split(' or ')) {
      await sql.raw(`create trigger ${name}_${event.split(' ')[0]} after ${event} on "${table}" begin ${bump}; end`).execute(db)
    }
  }
}

/** 2026_11_21_0004's down. */
async function dropDataVersion (db: Kysely<any>): Promise<void> {
  for (const [name, table, events] of DATA_VERSION_TRIGGERS) {
    if (isPostgres(db)) await sql.raw(`drop trigger if exists ${name} on "${table}"`).execute(db)
    else for (const event of events.split(' or ')) await sql.raw(`drop trigger if exists ${name}_${event.split(' ')[0]}`).execute(db)
  }
  if (isPostgres(db)) await sql.raw('drop function if exists bump_post_list_version()').execute(db)
  await db.schema.dropTable('data_version').ifExists().execute()
}
