import type { Kysely } from 'kysely'

/**
 * user.token_generation: every access token carries the generation it was issued under; bumping
 * it (`user revoke-tokens`, a ban) makes all earlier tokens invalid at once, on every instance,
 * through the user row that authentication reads anyway.
 */
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').addColumn('token_generation', 'integer', c => c.notNull().defaultTo(0)).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user').dropColumn('token_generation').execute()
}
