/**
 * Kysely's values, imported in this one module so one build of Kysely is loaded. `npm start`
 * runs the bundle (scripts/bundle.ts), which inlines it; test/architecture.test.ts holds to it.
 */
export type * from 'kysely'
export {
  DEFAULT_MIGRATION_TABLE,
  Kysely,
  Migrator,
  PostgresAdapter,
  PostgresDialect,
  PostgresDriver,
  SqliteDialect,
  SqliteDriver,
  createQueryId,
  sql
} from 'kysely'
