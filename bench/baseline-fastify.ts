/**
 * Baseline (b) of the list benchmark: the least a hand-written Fastify server does for
 * GET /v1/posts?limit=10: no plugins, no schemas, the same two SQL statements Roja runs (the
 * page with its joins, and the total from post_counter), the same JSON bytes. better-sqlite3
 * or pg by DATABASE_URL.
 */
import Fastify from 'fastify'
import SQLite from 'better-sqlite3'
import pg from 'pg'

const url = process.env.DATABASE_URL!
const PAGE = `select "post"."id", "post"."type", "post"."slug", "post"."title", "post"."body", "post"."tags", "post"."media_url",
  "post"."published_at", "post"."created_at", "post"."updated_at", "post"."creator_id", "user"."username", "profile"."first_name", "profile"."last_name"
  from "post" inner join "user" on "user"."id" = "post"."creator_id" inner join "profile" on "profile"."id" = "post"."creator_id"
  where "post"."published_at" <= $1 order by "post"."sort_at" desc, "post"."id" desc limit $2 offset $3`
const TOTAL = `select coalesce((select sum(published) from post_counter where 1 = 1), 0)
  - (select count(*) from post where published_at > $1) as total`

type Row = Record<string, any>
let query: (text: string, params: unknown[]) => Promise<Row[]>
if (url.startsWith('postgres')) {
  const pool = new pg.Pool({ connectionString: url, max: 10 })
  query = async (text, params) => (await pool.query(text, params)).rows
} else {
  const db = new SQLite(url.slice('sqlite:'.length), { readonly: true })
  db.pragma('journal_mode = WAL')
  const cache = new Map<string, SQLite.Statement>()
  const sqlite = (text: string) => text.replace(/\$\d+/g, '?')
  query = async (text, params) => {
    let statement = cache.get(text)
    if (!statement) cache.set(text, statement = db.prepare(sqlite(text)))
    return statement.all(...params) as Row[]
  }
}

const time = (v: Date | string) => (v instanceof Date ? v : new Date(v)).toISOString().slice(0, 19) + '+0000'

const app = Fastify()
app.get('/v1/posts', async (request) => {
  const q = request.query as { limit?: string, offset?: string }
  const now = new Date().toISOString()
  const [rows, [count]] = await Promise.all([
    query(PAGE, [now, Number(q.limit ?? 10), Number(q.offset ?? 0)]),
    query(TOTAL, [now])
  ])
  return {
    posts: rows.map(r => ({
      id: r.id, type: r.type, slug: r.slug, title: r.title, body: r.body, tags: JSON.parse(r.tags), media_url: r.media_url,
      creator: { id: r.creator_id, username: r.username, first_name: r.first_name, last_name: r.last_name },
      published_at: r.published_at === null ? null : time(r.published_at), created_at: time(r.created_at), updated_at: time(r.updated_at)
    })),
    total: Number(count.total)
  }
})
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
