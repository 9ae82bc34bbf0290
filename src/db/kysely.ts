/**
 * Kysely's values, imported in this one module so one build of Kysely is loaded. `npm start`
 * runs the bundle (scripts/bundle.ts), which inlines it; test/architecture.test.ts holds to it.
 */
export type * from 'kysely'
export {
  CompiledQuery,
  DEFAULT_MIGRATION_TABLE,
  DefaultConnectionProvider,
  DefaultQueryExecutor,
  Kysely,
  Migrator,
  PostgresAdapter,
  PostgresDialect,
  PostgresDriver,
  SqliteDialect,
  SqliteDriver,
  Transaction,
  TransactionBuilder,
  createQueryId,
  sql
} from 'kysely'
