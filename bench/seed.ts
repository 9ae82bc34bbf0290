/**
 * Seeds one benchmark database in its own process (bench/run.ts runs several at once and bounds
 * each in time): migrations, then Roja's seeder (scripts/seed.ts, which keeps every invariant the
 * way the domain does), then on PostgreSQL `vacuum analyze`, as autovacuum would have by now.
 * Usage: node --import tsx bench/seed.ts <DATABASE_URL> <posts>; prints one JSON line.
 */
import { sql } from '../src/db/kysely.js'
import { createDb, isPostgres } from '../src/db/dialect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { seed } from '../scripts/seed.js'
import { loadConfig } from '../plugins/config.js'

const [url, posts] = process.argv.slice(2)
const db = createDb(url)
try {
  await migrateToLatest(db)
  // SQLite: a page cache big enough for the indexes (random UUIDs land all over them); this
  // connection only, nothing persists. It took seeding 1 M posts from minutes of page shuffling down to CPU.
  if (!isPostgres(db)) await sql`pragma cache_size = -262144`.execute(db)
  const started = Date.now()
  // the seeded users' password at the cost the benchmarked servers default to
  const result = await seed(db, { posts: Number(posts), quiet: true, hashCost: loadConfig({}).PASSWORD_HASH_COST })
  // statistics, and a visibility map for index-only counts
  if (isPostgres(db)) await sql`vacuum analyze`.execute(db)
  console.log(JSON.stringify({ creators: result.creatorUsernames, seconds: (Date.now() - started) / 1000 }))
} finally {
  await db.destroy()
}
