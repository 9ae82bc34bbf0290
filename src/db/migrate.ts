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

/** Every migration, by its date_slug name. A static list works the same from src/ (tsx) and dist/. */
export const migrations: Record<string, Migration> = {
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
  '2026_11_29_0200_account_links': accountLinks
}

/** A migration that ran and failed (as opposed to a database that could not be reached). */
export class MigrationError extends Error {
  constructor (readonly migration: string, cause: unknown) {
    super(`migration ${migration} failed: ${(cause as Error)?.message ?? String(cause)}`, { cause })
  }
}

const provider: MigrationProvider = { getMigrations: async () => migrations }

export async function migrateToLatest (db: Db): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema unless told which one: name ours, or
  // another schema's tables (a parallel test file's) pass for ours and the migration fails.
  const { schema: migrationTableSchema, present } = await migrationTable(db)
  if (present && await upToDate(db, migrationTableSchema)) return []
  const migrator = new Migrator({ db, provider, migrationTableSchema })
  const { error, results } = await migrator.migrateToLatest()
  const failed = results?.find(r => r.status === 'Error')
  if (error && failed) throw new MigrationError(failed.migrationName, error)
  if (error) throw error
  return (results ?? []).filter(r => r.status === 'Success').map(r => r.migrationName)
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
  const table = schema ? sql.id(schema, DEFAULT_MIGRATION_TABLE) : sql.id(DEFAULT_MIGRATION_TABLE)
  const { rows } = await sql<{ name: string, timestamp: string }>`select name, timestamp from ${table}`.execute(db)
  // Kysely's order of the applied ones (Migrator#getExecutedMigrations) against its order of ours.
  const applied = rows
    .sort((a, b) => a.timestamp === b.timestamp ? a.name.localeCompare(b.name) : new Date(a.timestamp).getTime() - new Date(b.timestamp).getTime())
    .map(r => r.name)
  const known = Object.keys(migrations).sort()
  return applied.length === known.length && applied.every((name, i) => name === known[i])
}
