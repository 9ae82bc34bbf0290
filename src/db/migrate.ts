import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely'
import { isPostgres, type Db } from './dialect.js'
import * as initial from './migrations/2026_11_21_0001_initial.js'
import * as postCounter from './migrations/2026_11_21_0002_post_counter.js'
import * as postSortAtPublished from './migrations/2026_11_21_0003_post_sort_at_published.js'
import * as dataVersion from './migrations/2026_11_21_0004_data_version.js'
import * as postCounterSlots from './migrations/2026_11_23_0001_post_counter_slots.js'
import * as tokenGeneration from './migrations/2026_11_23_0100_token_generation.js'
import * as emailVerifiedAt from './migrations/2026_11_23_0200_email_verified_at.js'
import * as mediaActiveContentAsText from './migrations/2026_11_23_0300_media_active_content_as_text.js'

/** Every migration, by its date_slug name. A static list works the same from src/ (tsx) and dist/. */
export const migrations: Record<string, Migration> = {
  '2026_11_21_0001_initial': initial,
  '2026_11_21_0002_post_counter': postCounter,
  '2026_11_21_0003_post_sort_at_published': postSortAtPublished,
  '2026_11_21_0004_data_version': dataVersion,
  '2026_11_23_0001_post_counter_slots': postCounterSlots,
  '2026_11_23_0100_token_generation': tokenGeneration,
  '2026_11_23_0200_email_verified_at': emailVerifiedAt,
  '2026_11_23_0300_media_active_content_as_text': mediaActiveContentAsText
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
  const migrationTableSchema = isPostgres(db)
    ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0].schema
    : undefined
  const migrator = new Migrator({ db, provider, migrationTableSchema })
  const { error, results } = await migrator.migrateToLatest()
  const failed = results?.find(r => r.status === 'Error')
  if (error && failed) throw new MigrationError(failed.migrationName, error)
  if (error) throw error
  return (results ?? []).filter(r => r.status === 'Success').map(r => r.migrationName)
}
