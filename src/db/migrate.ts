import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Migration, type MigrationProvider } from './kysely.js'
import { isPostgres, type Db } from './dialect.js'
import * as initial from './migrations/2026_11_21_0001_initial.js'
import * as postCounter from './migrations/2026_11_21_0002_post_counter.js'
import * as postSortAtPublished from './migrations/2026_11_21_0003_post_sort_at_published.js'
import * as dataVersion from './migrations/2026_11_21_0004_data_version.js'
import * as postCounterSlots from './migrations/2026_11_23_0001_post_counter_slots.js'
import * as tokenGeneration from './migrations/2026_11_23_0100_token_generation.js'
import * as emailVerifiedAt from './migrations/2026_11_23_0200_email_verified_at.js'
import * as mediaActiveContentAsText from './migrations/2026_11_23_0300_media_active_content_as_text.js'
import * as postPublishedAtType from './migrations/2026_11_23_0400_post_published_at_type.js'
import * as postCounterSlotSequence from './migrations/2026_11_25_0001_post_counter_slot_sequence.js'
import * as emailVerificationToken from './migrations/2026_11_27_0100_email_verification_token.js'
import * as mediaUpload from './migrations/2026_11_27_0200_media_upload.js'
import * as postSchedule from './migrations/2026_11_28_0001_post_schedule.js'
import * as alertReview from './migrations/2026_11_29_0100_alert_review.js'
import * as accountLinks from './migrations/2026_11_29_0200_account_links.js'
import * as migrationKind from './migrations/2026_11_29_0300_migration_kind.js'
import * as postWordCount from './migrations/2026_11_29_0301_post_word_count.js'
import * as commentAuthorIndex from './migrations/2026_11_29_0302_comment_author_index.js'

/**
 * What a migration module exports: up and down, and from 2026_11_29_0300 on its `kind`: `expand`
 * adds only what the previous release can ignore, `contract` removes or changes what it reads
 * (docs/development.md, Migrations). `transaction = false` runs it outside a transaction (CREATE
 * INDEX CONCURRENTLY, a batched backfill): such a migration must be safe to run again from the start.
 */
export interface RojaMigration extends Migration {
  kind?: 'expand' | 'contract'
  transaction?: boolean
}

/** Every migration, by its date_slug name. A static list works the same from src/ (tsx) and dist/. */
export const migrations: Record<string, RojaMigration> = {
  '2026_11_21_0001_initial': initial,
  '2026_11_21_0002_post_counter': postCounter,
  '2026_11_21_0003_post_sort_at_published': postSortAtPublished,
  '2026_11_21_0004_data_version': dataVersion,
  '2026_11_23_0001_post_counter_slots': postCounterSlots,
  '2026_11_23_0100_token_generation': tokenGeneration,
  '2026_11_23_0200_email_verified_at': emailVerifiedAt,
  '2026_11_23_0300_media_active_content_as_text': mediaActiveContentAsText,
  '2026_11_23_0400_post_published_at_type': postPublishedAtType,
  '2026_11_25_0001_post_counter_slot_sequence': postCounterSlotSequence,
  '2026_11_27_0100_email_verification_token': emailVerificationToken,
  '2026_11_27_0200_media_upload': mediaUpload,
  '2026_11_28_0001_post_schedule': postSchedule,
  '2026_11_29_0100_alert_review': alertReview,
  '2026_11_29_0200_account_links': accountLinks,
  '2026_11_29_0300_migration_kind': migrationKind,
  '2026_11_29_0301_post_word_count': postWordCount,
  '2026_11_29_0302_comment_author_index': commentAuthorIndex
}

/** A migration that ran and failed (as opposed to a database that could not be reached). */
export class MigrationError extends Error {
  constructor (readonly migration: string, cause: unknown) {
    super(`migration ${migration} failed: ${(cause as Error)?.message ?? String(cause)}`, { cause })
  }
}

/**
 * The database holds migrations this code does not know (a newer release ran them) and they are not
 * all `expand`, or it lacks some this code needs besides: this code cannot serve it.
 */
export class DatabaseAheadError extends MigrationError {
  constructor (readonly unknown: Array<{ name: string, kind: string }>, readonly pending: string[]) {
    const listed = unknown.map(m => `${m.name} (${m.kind})`).join(', ')
    super(unknown[0].name, undefined)
    this.message = (pending.length > 0
      ? `the database has migrations this release does not know (${listed}) and lacks ${pending.join(', ')}: ` +
        'it was migrated by another line of releases; start the release that migrated it'
      : `the database is ahead of this release with migrations that are not expand-only: ${listed}; ` +
        'start the release that migrated it (or a later one)')
  }
}

/** Where migrations record their kind, for releases that do not know them (2026_11_29_0300 creates it). */
export const KIND_TABLE = 'roja_migration_kind'
const KIND_TABLE_FROM = '2026_11_29_0300_migration_kind'

// Each migration records its kind beside Kysely's own record, on the same connection (in its transaction).
function recording (name: string, m: RojaMigration): Migration {
  if (name < KIND_TABLE_FROM) return m
  return {
    up: async (db) => {
      await m.up(db)
      await db.insertInto(KIND_TABLE).values({ name, kind: m.kind ?? 'contract' }).execute()
    },
    down: async (db) => {
      if (name !== KIND_TABLE_FROM) await db.deleteFrom(KIND_TABLE).where('name', '=', name).execute()
      await m.down!(db)
    }
  }
}
const recorded = Object.fromEntries(Object.entries(migrations).map(([name, m]) => [name, recording(name, m)]))
const provider: MigrationProvider = { getMigrations: async () => recorded }

// Kysely's own advisory lock (PostgresAdapter): taken here by polling, so that an instance waiting for
// another's migration holds no snapshot, which CREATE INDEX CONCURRENTLY would wait for (a deadlock).
const KYSELY_LOCK_ID = BigInt('3853314791062309107')

/**
 * Applies the pending migrations, one instance at a time. A database ahead of this code (migrations
 * it does not know) is served as it is when they are all expand-only, refused otherwise
 * (DatabaseAheadError). Migrations run in one transaction, except one that asks not to
 * (`transaction = false`), which runs alone after those before it committed.
 */
export async function migrateToLatest (db: Db): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema unless told which one: name ours, or
  // another schema's tables (a parallel test file's) pass for ours and the migration fails.
  const { schema: migrationTableSchema, present } = await migrationTable(db)
  if (present && await upToDate(db, migrationTableSchema)) return []
  return db.connection().execute(async (conn) => {
    if (isPostgres(db)) {
      while (!(await sql<{ ok: boolean }>`select pg_try_advisory_lock(${sql.lit(KYSELY_LOCK_ID)}) as ok`.execute(conn)).rows[0].ok) {
        await new Promise(resolve => setTimeout(resolve, 200))
      }
    }
    try {
      // read again under the lock: another instance may have migrated meanwhile
      const { present } = await migrationTable(conn)
      if (present) await refuseUnknown(conn, migrationTableSchema)
      return await migratePending(conn, migrationTableSchema, present)
    } finally {
      if (isPostgres(db)) await sql`select pg_advisory_unlock(${sql.lit(KYSELY_LOCK_ID)})`.execute(conn)
    }
  })
}

/**
 * Runs what is pending in order: the transactional ones through Kysely's Migrator, together; one
 * with `transaction = false` alone on the connection, recorded in Kysely's table as the Migrator
 * records (a Migrator run per migration would read the whole catalogue each time).
 */
async function migratePending (conn: Db, migrationTableSchema: string | undefined, present: boolean): Promise<string[]> {
  const done = new Set(present ? await appliedNames(conn, migrationTableSchema) : [])
  const pending = Object.keys(migrations).sort().filter(name => !done.has(name))
  const applied: string[] = []
  while (pending.length > 0) {
    if (migrations[pending[0]].transaction === false && applied.length + done.size > 0) {
      const name = pending.shift()!
      try {
        await recorded[name].up(conn)
      } catch (err) {
        throw new MigrationError(name, err)
      }
      await sql`insert into ${table(migrationTableSchema, DEFAULT_MIGRATION_TABLE)} (name, timestamp)
        values (${name}, ${new Date().toISOString()})`.execute(conn)
      applied.push(name)
      continue
    }
    // up to the next one that runs alone (the very first migration of a database always goes through the Migrator, which makes its tables)
    const next = pending.findIndex((name, i) => i > 0 && migrations[name].transaction === false)
    const target = pending.splice(0, next === -1 ? pending.length : next).at(-1)!
    const { error, results } = await new Migrator({ db: conn, provider, migrationTableSchema }).migrateTo(target)
    const failed = results?.find(r => r.status === 'Error')
    if (error && failed) throw new MigrationError(failed.migrationName, error)
    if (error) throw error
    applied.push(...(results ?? []).filter(r => r.status === 'Success').map(r => r.migrationName))
  }
  return applied
}

/** Throws DatabaseAheadError unless every migration of the database that this code does not know is expand-only. */
async function refuseUnknown (conn: Db, schema: string | undefined): Promise<void> {
  const applied = await appliedNames(conn, schema)
  const unknown = applied.filter(name => !(name in migrations))
  if (unknown.length === 0) return
  const kinds = new Map((await kindTablePresent(conn, schema))
    ? (await sql<{ name: string, kind: string }>`select name, kind from ${table(schema, KIND_TABLE)}`.execute(conn)).rows
        .map(r => [r.name, r.kind])
    : [])
  const described = unknown.map(name => ({ name, kind: kinds.get(name) ?? 'unrecorded' }))
  const pending = Object.keys(migrations).filter(name => !applied.includes(name))
  if (pending.length > 0 || described.some(m => m.kind !== 'expand')) throw new DatabaseAheadError(described, pending)
}

const table = (schema: string | undefined, name: string) => schema ? sql.id(schema, name) : sql.id(name)

async function appliedNames (db: Db, schema: string | undefined): Promise<string[]> {
  return (await sql<{ name: string }>`select name from ${table(schema, DEFAULT_MIGRATION_TABLE)}`.execute(db)).rows.map(r => r.name)
}

async function kindTablePresent (db: Db, schema: string | undefined): Promise<boolean> {
  const { rows } = isPostgres(db)
    ? await sql`select 1 from pg_catalog.pg_tables where schemaname = ${schema} and tablename = ${KIND_TABLE}`.execute(db)
    : await sql`select 1 from sqlite_master where type = 'table' and name = ${KIND_TABLE}`.execute(db)
  return rows.length > 0
}

/** The schema of Kysely's migration table (PostgreSQL: the current one) and whether the table is there. */
async function migrationTable (db: Db): Promise<{ schema?: string, present: boolean }> {
  if (isPostgres(db)) {
    const { rows } = await sql<{ schema: string, present: boolean }>`select current_schema() as schema, exists (select 1
      from pg_catalog.pg_tables where schemaname = current_schema() and tablename = ${DEFAULT_MIGRATION_TABLE}) as present`.execute(db)
    return rows[0]
  }
  const { rows } = await sql`select 1 from sqlite_master where type = 'table' and name = ${DEFAULT_MIGRATION_TABLE}`.execute(db)
  return { present: rows.length > 0 }
}

/**
 * True when the database holds exactly our migrations, in Kysely's order: the Migrator would find
 * nothing to do and no error. Its checks (introspection, lock) cost most of a start on PostgreSQL.
 * A migration is recorded in the transaction that applies it, so a concurrent start shows either
 * all of its work or none (and then goes through the Migrator, which waits for the lock).
 */
async function upToDate (db: Db, schema: string | undefined): Promise<boolean> {
  const { rows } = await sql<{ name: string, timestamp: string }>`select name, timestamp
    from ${table(schema, DEFAULT_MIGRATION_TABLE)}`.execute(db)
  // Kysely's order of the applied ones (Migrator#getExecutedMigrations) against its order of ours.
  const applied = rows
    .sort((a, b) => a.timestamp === b.timestamp ? a.name.localeCompare(b.name) : new Date(a.timestamp).getTime() - new Date(b.timestamp).getTime())
    .map(r => r.name)
  const known = Object.keys(migrations).sort()
  return applied.length === known.length && applied.every((name, i) => name === known[i])
}
