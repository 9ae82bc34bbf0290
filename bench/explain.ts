/**
 * The query plans of the first list page: runs listPosts (v1) and listPostsAfter (v2) as the
 * routes do, captures the SQL they send, and prints each statement's plan (SQLite: EXPLAIN QUERY
 * PLAN; PostgreSQL: EXPLAIN ANALYZE). Point it at a seeded database:
 *
 *   DATABASE_URL=sqlite:bench/.tmp/cache/large-1000000.sqlite node --import tsx bench/explain.ts
 */
import type { CompiledQuery } from '../src/db/kysely.js'
import { createDb, isPostgres } from '../src/db/dialect.js'
import { listPosts, listPostsAfter } from '../src/domain/posts.js'

// Queries are compiled once and run with each request's values: the statements are captured as
// they run (Kysely's log), with their values.
const captured: CompiledQuery[] = []
let capturing = false
const db = createDb(process.env.DATABASE_URL!, { log: (event) => { if (capturing) captured.push(event.query) } })
const traced = db
const postgres = isPostgres(db)

for (const [title, run] of [
  ['GET /v1/posts?limit=10', () => listPosts(traced, { limit: 10, offset: 0 })],
  ['GET /v1/posts?limit=10&type=COURSE', () => listPosts(traced, { limit: 10, offset: 0, type: 'COURSE' })],
  ['GET /v2/posts?limit=10', () => listPostsAfter(traced, { limit: 10 })],
  ['GET /v2/posts?limit=10&cursor=(page 1000)', async () => {
    const deep = await db.selectFrom('post').select(['sort_at', 'id']).where('published_at', '<=', new Date().toISOString())
      .orderBy('sort_at', 'desc').orderBy('id', 'desc').offset(9990).limit(1).executeTakeFirst()
    return listPostsAfter(traced, { limit: 10 }, deep && { sort_at: new Date(deep.sort_at).toISOString(), id: deep.id })
  }]
] as const) {
  captured.length = 0
  capturing = true
  await run()
  capturing = false
  console.log(`\n### ${title}`)
  for (const query of [...captured]) {
    const started = performance.now()
    const rows = await db.executeQuery({ ...query, sql: `${postgres ? 'explain analyze' : 'explain query plan'} ${query.sql}` })
    const ms = performance.now() - started
    console.log(`\n${query.sql.replace(/\s+/g, ' ')}\n-- (${ms.toFixed(1)} ms)`)
    for (const row of rows.rows as Array<Record<string, unknown>>) console.log('   ' + String(row.detail ?? row['QUERY PLAN']))
  }
}
await db.destroy()
