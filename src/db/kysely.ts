import { createRequire } from 'node:module'
import type * as K from 'kysely'

/**
 * Kysely's values, from its CommonJS build: Node 20 loads its 262 ES modules in about twice the
 * time (about 140 ms against 70 ms, a tenth of a start). Every module imports Kysely's values
 * from here, so one copy is loaded (test/architecture.test.ts holds to it); types are erased.
 */
const kysely = createRequire(import.meta.url)('kysely') as typeof K
export type * from 'kysely'
export const { DEFAULT_MIGRATION_TABLE, Migrator, PostgresAdapter, PostgresDialect, SqliteDialect, createQueryId, sql } = kysely
export const Kysely = kysely.Kysely
export type Kysely<DB> = K.Kysely<DB>
