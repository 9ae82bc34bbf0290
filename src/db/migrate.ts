import { Migrator, type Migration, type MigrationProvider } from 'kysely'
import type { Db } from './dialect.js'
import * as initial from './migrations/2026_11_21_0001_initial.js'

/** Every migration, by its date_slug name. A static list works the same from src/ (tsx) and dist/. */
export const migrations: Record<string, Migration> = {
  '2026_11_21_0001_initial': initial
}

const provider: MigrationProvider = { getMigrations: async () => migrations }

export async function migrateToLatest (db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter(r => r.status === 'Success').map(r => r.migrationName)
}
