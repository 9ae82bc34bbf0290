/**
 * The minimal same-SQL baseline: what a skilled engineer writes by hand for the routes the
 * benchmark measures, on a bare Fastify with no plugins but @fastify/jwt, no schemas, no logging.
 * It runs the statements Roja runs and answers byte for byte what Roja answers (bench/run.ts
 * checks a sample before measuring), Link and ETag headers included:
 *
 *   GET  /v1/posts               page + total (filters type, tags, creator_id; limit, offset)
 *   GET  /v1/posts/:postId       one published post, with its ETag
 *   GET  /v1/users/me/posts      bearer JWT (HS256, verified-token cache) + user row, the caller's posts
 *   POST /v1/posts               bearer JWT + user row, then insert post and tags and read it back: on PostgreSQL in one
 *                                statement (WITH … INSERT … RETURNING), on SQLite in one transaction
 *   POST /v1/posts/:postId/comments  bearer JWT + user row, then the comment on a post the caller may see, the post's
 *                                creator's alert and e-mail, and the read-back: on PostgreSQL in one statement, on SQLite
 *                                Roja's reads and writes in one transaction
 *
 * BASELINE_FEATURES=1 makes it the like-for-like baseline: Roja's production features from the same
 * well-kept plugins, configured as Roja configures them and used the plain way (helmet run per
 * request, fastify-metrics' own route histogram, one pino line per request to stdout, which the
 * harness sends to a file): what Roja's conventions machinery (TypeBox, the problem catalogue,
 * idempotency, deprecation, Kysely) and its speed devices are measured against.
 *
 * better-sqlite3 or pg by DATABASE_URL; JWT_SECRET as Roja's. Statements are prepared once per
 * connection as Roja's are (on PostgreSQL a named statement for each text that takes values). The
 * total of the unfiltered and type-filtered lists comes from post_counter and post_schedule (the
 * cheapest exact total the schema offers), the other filters' from count(*).
 */
import { hash, randomUUID } from 'node:crypto'
import cors from '@fastify/cors'
import jwt from '@fastify/jwt'
import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import metrics from 'fastify-metrics'
import helmet from 'helmet'
import SQLite from 'better-sqlite3'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import pg from 'pg'

type Row = Record<string, any>
type Statement = [text: string, params: unknown[]]
type Run = (text: string, params: unknown[]) => Row[]
interface Db {
  all: (text: string, params: unknown[]) => Promise<Row[]>
  /** runs the statements in order in one transaction; the rows of the last */
  transaction: (statements: Statement[]) => Promise<Row[]>
  /** SQLite: work that reads before it writes, in one transaction */
  atomically?: <T>(work: (run: Run) => T) => T
}

const url = process.env.DATABASE_URL!
const postgres = url.startsWith('postgres')

/** Statements are written with `?`; PostgreSQL numbers them. */
const numbered = (text: string) => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

function openPg (): Db {
  // Roja's pool size, and the same type parsing: bigint as a number, timestamptz as the ISO text
  // SQLite stores, cut from a UTC session's text (another zone through pg's own parser)
  pg.types.setTypeParser(20, (v: string) => Number(v))
  const parseDate = pg.types.getTypeParser(1184) as (v: string) => Date
  pg.types.setTypeParser(1184, (v: string) => {
    if (v[4] !== '-' || v[10] !== ' ' || !v.endsWith('+00')) return parseDate(v).toISOString()
    return `${v.slice(0, 10)}T${v.slice(11, 19)}.${(v[19] === '.' ? v.slice(20, Math.min(23, v.length - 3)) : '').padEnd(3, '0')}Z`
  })
  // Prepared as Roja prepares them: a named statement for each text that takes values, with PostgreSQL's default plan choice.
  const pool = new pg.Pool({ connectionString: url, max: 10 })
  pool.on('connect', client => {
    client.query("set time zone 'UTC'").catch(() => {})
  })
  const statements = new Map<string, pg.QueryConfig>()
  const query = (text: string, values: unknown[]): pg.QueryConfig => {
    let statement = statements.get(text)
    if (statement === undefined) statements.set(text, (statement = { name: `s${statements.size}`, text: numbered(text) }))
    return values.length > 0 ? { ...statement, values } : { text: statement.text }
  }
  return {
    all: async (text, params) => (await pool.query(query(text, params))).rows,
    transaction: async list => {
      const client = await pool.connect()
      try {
        await client.query('begin')
        let rows: Row[] = []
        for (const [text, params] of list) rows = (await client.query(query(text, params))).rows
        await client.query('commit')
        return rows
      } catch (err) {
        await client.query('rollback')
        throw err
      } finally {
        client.release()
      }
    }
  }
}

function openSqlite (): Db {
  const db = new SQLite(url.slice('sqlite:'.length))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  const statements = new Map<string, SQLite.Statement>()
  const run = (text: string, params: unknown[]): Row[] => {
    let statement = statements.get(text)
    if (!statement) statements.set(text, (statement = db.prepare(text)))
    if (statement.reader) return statement.all(...params) as Row[]
    statement.run(...params)
    return []
  }
  // better-sqlite3 is synchronous: a transaction runs start to commit without yielding, as it is meant to be used.
  const transaction = db.transaction((list: Statement[]) => list.reduce<Row[]>((_, [text, params]) => run(text, params), []))
  return {
    all: async (text, params) => run(text, params),
    transaction: async list => transaction(list),
    // IMMEDIATE: it reads before it writes, so it takes the write lock first rather than fail on a snapshot a writer moved
    atomically: work => db.transaction(() => work(run)).immediate()
  }
}

const db = postgres ? openPg() : openSqlite()

const COLUMNS = `"post"."id", "post"."type", "post"."slug", "post"."title", "post"."body", "post"."word_count", "post"."tags", "post"."media_url",
  "post"."published_at", "post"."created_at", "post"."updated_at", "post"."creator_id", "user"."username", "profile"."first_name", "profile"."last_name"`
const FROM = 'from "post" inner join "user" on "user"."id" = "post"."creator_id" inner join "profile" on "profile"."id" = "post"."creator_id"'
const SORT = 'order by "post"."sort_at" desc, "post"."id" desc'
const BY_ID = `select ${COLUMNS} ${FROM} where "post"."id" = ?`
const USER = 'select "id", "username", "email", "is_creator", "is_active" from "user" where "id" = ?'
const INSERT_POST = `insert into "post" ("id", "creator_id", "type", "slug", "title", "body", "word_count", "tags", "media_url", "published_at",
  "created_at", "updated_at", "sort_at") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
// PostgreSQL's create, as Roja's: the post, its tags (from the post's JSON list) and its read-back in one statement.
const CREATE_POST = `with "new_post" as (${INSERT_POST} returning *), "new_post_tag" as (insert into "post_tag" ("post_id", "tag")
  select "new_post"."id", json_array_elements_text(new_post.tags::json) as "tag" from "new_post") select ${COLUMNS}
  from "new_post" as "post" inner join "user" on "user"."id" = "post"."creator_id" inner join "profile" on "profile"."id" = "post"."creator_id"`

const COMMENT_COLUMNS = `"comment"."id", "comment"."post_id", "comment"."author_id", "comment"."text", "comment"."created_at",
  "comment"."updated_at", "user"."username", "profile"."first_name", "profile"."last_name"`
const COMMENT_PEOPLE = 'inner join "user" on "user"."id" = "comment"."author_id" inner join "profile" on "profile"."id" = "comment"."author_id"'
const INSERT_COMMENT = 'insert into "comment" ("id", "post_id", "author_id", "text", "created_at", "updated_at")'
const ALERT_MESSAGE = [' left a ', 'comment', ' on your post "', '"']
// The comment's alert, as Roja's (src/domain/alerts.ts): the post when the caller may see it, with its creator's address; the
// alert from it unless the caller is the creator; the e-mail from the alert while the address is verified.
const PARENT = `"parent" as (select "post"."id", "post"."title", "post"."creator_id", "user"."email", "user"."email_verified_at"
  from "post" inner join "user" on "user"."id" = "post"."creator_id" where "post"."id" = ? and ("post"."creator_id" = ? or "post"."published_at" <= ?))`
const INSERT_ALERT = `insert into "alert" ("id", "user_id", "kind", "message", "post_id", "created_at", "sent_at") select ? as "id",
  "parent"."creator_id", ? as "kind", "actor"."username" || ? || ? || ? || "parent"."title" || ? as "message", "parent"."id" as "post_id",
  ? as "created_at", null as "sent_at" from "parent" inner join "user" as "actor" on "actor"."id" = ? where "parent"."creator_id" <> ?`
const INSERT_MAIL = `insert into "outbox_message" ("id", "to_address", "subject", "body", "alert_id", "next_attempt_at", "created_at")
  select ? as "id", "parent"."email", ? as "subject", "new_alert"."message", "new_alert"."id", ? as "next_attempt_at", ? as "created_at"
  from "new_alert" inner join "parent" on true where "parent"."email_verified_at" is not null`
// PostgreSQL's comment create, as Roja's: the rule's queries, the comment and its read-back in one statement.
const CREATE_COMMENT = `with ${PARENT}, "new_alert" as (${INSERT_ALERT} returning "alert"."id", "alert"."message"), "new_mail" as (${INSERT_MAIL}),
  "new_comment" as (${INSERT_COMMENT} select ? as "id", "parent"."id" as "post_id", ? as "author_id", ? as "text", ? as "created_at",
  ? as "updated_at" from "parent" returning *)
  select ${COMMENT_COLUMNS} from "new_comment" as "comment" ${COMMENT_PEOPLE}`
// SQLite's, as Roja's: no data-modifying WITH there, so the rule's queries run in turn in the transaction.
const SQLITE_ALERT = `with ${PARENT} ${INSERT_ALERT}`
const SQLITE_MAIL = `with ${PARENT}, "new_alert" as (select "alert"."id", "alert"."message" from "alert" where "alert"."id" = ?) ${INSERT_MAIL}`

// Timestamps arrive as toISOString's text on both databases: the output form is cut from it, as Roja does.
const time = (v: string) => (v.length === 24 && v[23] === 'Z' ? v.slice(0, 19) : new Date(v).toISOString().slice(0, 19)) + '+0000'

/** Roja's word count: runs of characters between white space (null on a post an older release wrote). */
const words = (body: string) => body.split(/\s+/).filter(w => w !== '').length

function toPost (r: Row) {
  return {
    id: r.id,
    type: r.type,
    slug: r.slug,
    title: r.title,
    body: r.body,
    word_count: r.word_count ?? words(r.body),
    tags: JSON.parse(r.tags),
    media_url: r.media_url,
    creator: { id: r.creator_id, username: r.username, first_name: r.first_name, last_name: r.last_name },
    published_at: r.published_at === null ? null : time(r.published_at),
    created_at: time(r.created_at),
    updated_at: time(r.updated_at)
  }
}

interface ListQuery {
  limit?: string
  offset?: string
  type?: string
  tags?: string
  creator_id?: string
}

/** The page and the total, with the same WHERE clause (the filters in Roja's order). */
async function list (q: ListQuery, creatorId: string | undefined, unpublished: boolean) {
  const now = new Date().toISOString()
  // Roja's bound: a visible post's sort_at is never a day ahead, so the index is read from there down.
  const horizon = new Date(Date.now() + 86_400_000).toISOString()
  const where: string[] = []
  const params: unknown[] = []
  if (!unpublished) {
    where.push('"post"."published_at" <= ?', '"post"."sort_at" <= ?')
    params.push(now, horizon)
  }
  if (creatorId !== undefined) {
    where.push('"post"."creator_id" = ?')
    params.push(creatorId)
  }
  if (q.type !== undefined) {
    where.push('"post"."type" = ?')
    params.push(q.type)
  }
  if (q.tags !== undefined) {
    const tags = [...new Set(q.tags.split(',').map(t => t.toLowerCase()))]
    where.push(
      `"post"."id" in (select "post_tag"."post_id" from "post_tag" where "post_tag"."tag" in (${tags.map(() => '?').join(', ')}) group by "post_tag"."post_id" having count(*) = ?)`
    )
    params.push(...tags, tags.length)
  }
  const filter = where.length ? `where ${where.join(' and ')}` : ''
  const limit = Math.min(100, Math.max(1, Math.trunc(Number(q.limit ?? 10)) || 10))
  const offset = Number(q.offset ?? 0)
  let total: Promise<Row[]>
  if (creatorId === undefined && q.tags === undefined && !unpublished) {
    const ofType = q.type === undefined ? '' : 'and type = ?'
    // Roja's: the slots, less the scheduled posts: from the index up to the day after tomorrow, from post_schedule beyond
    const horizon = new Date(Math.floor(Date.parse(now) / 86_400_000) * 86_400_000 + 2 * 86_400_000).toISOString()
    const day = horizon.slice(0, 10)
    total = db.all(
      `select coalesce((select sum(published) from post_counter where 1 = 1 ${ofType}), 0)
      - (select count(*) from post where published_at > ? and published_at < ? ${ofType})
      - coalesce((select sum(scheduled) from post_schedule where day >= ? ${ofType}), 0) as total`,
      q.type === undefined ? [now, horizon, day] : [q.type, now, horizon, q.type, day, q.type]
    )
  } else {
    total = db.all(`select count(*) as "total" from "post" ${filter}`, params)
  }
  // Roja's plan: a page of the public lists takes its keys from the post table alone (the rows an
  // offset skips stay in the index), then joins those posts; on SQLite only from offset 100, as
  // shallower pages read directly for less. The size is written in (one statement per size): SQLite
  // would prepare a statement with a bound LIMIT again on every run, PostgreSQL keeps a generic plan,
  // for which its keys read are capped at the page's reach (its end's next power of two, at least 128).
  const LIMIT = `limit ${limit} offset ?`
  const page =
    creatorId === undefined && (postgres || offset >= 100)
      ? `select ${COLUMNS} ${FROM} inner join (${
          postgres
            ? `select "capped"."page_key" from (select "post"."id" as "page_key", "post"."sort_at" as "sort_0", "post"."id" as "sort_1" from "post" ${filter} ${SORT} limit ${keysCap(offset, limit)}) as "capped" order by "capped"."sort_0" desc, "capped"."sort_1" desc ${LIMIT}`
            : `select "post"."id" as "page_key" from "post" ${filter} ${SORT} ${LIMIT}`
        }) as "page" on "page"."page_key" = "post"."id" ${SORT}`
      : `select ${COLUMNS} ${FROM} ${filter} ${SORT} ${LIMIT}`
  const [rows, [count]] = await Promise.all([db.all(page, [...params, offset]), total])
  return { limit, offset, posts: rows.map(toPost), total: Number(count.total) }
}

function keysCap (offset: number, limit: number): number {
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(128, 2 ** Math.ceil(Math.log2(offset + limit))))
}

/** RFC 8288 Link: next, prev and first, keeping the request's other parameters (as Roja's list convention). */
function links (request: FastifyRequest, reply: FastifyReply, limit: number, offset: number, total: number) {
  const [path, search = ''] = request.url.split('?')
  const out: string[] = []
  const at = (to: number, rel: string) => {
    const params = new URLSearchParams(search)
    params.set('limit', String(limit))
    params.set('offset', String(to))
    out.push(`<${path}?${params.toString()}>; rel="${rel}"`)
  }
  if (offset + limit < total) at(offset + limit, 'next')
  if (offset > 0) at(Math.max(0, Math.min(offset - limit, total - limit > 0 ? total - limit : 0)), 'prev')
  if (offset > 0) at(0, 'first')
  if (out.length > 0) reply.header('link', out.join(', '))
}

const features = process.env.BASELINE_FEATURES === '1'
const app = Fastify(features ? { logger: { level: 'info' }, disableRequestLogging: true, trustProxy: '127.0.0.1' } : {})
if (features) {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed')
    done()
  })
  const secure = helmet({ contentSecurityPolicy: false, hsts: { maxAge: 31536000, includeSubDomains: true } })
  app.addHook('onRequest', (request, reply, done) => {
    secure(request.raw as never, reply.raw as never, (err?: unknown) => done(err as Error | undefined))
  })
  await app.register(cors, {
    origin: ['https://app.example.com'],
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'if-match', 'if-none-match', 'idempotency-key', 'accept', 'range'],
    exposedHeaders: ['location', 'etag', 'link', 'retry-after', 'deprecation', 'sunset'],
    maxAge: 600
  })
  await app.register(rateLimit, { global: true, max: 1_000_000_000, timeWindow: 60_000 })
  await app.register(metrics.default, {
    endpoint: '/metrics',
    routeMetrics: {
      enabled: { histogram: true, summary: false },
      overrides: { histogram: { buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] } }
    }
  })
  await app.register(underPressure, {
    maxEventLoopDelay: 1000,
    sampleInterval: 1000,
    healthCheck: async () => {
      await db.all('select 1', [])
      return true
    },
    healthCheckInterval: 1000
  })
}
// Verified as Roja verifies (its config's defaults): HS256 only, the claims it requires, its issuer and audience, its token lifetime.
await app.register(jwt, {
  secret: process.env.JWT_SECRET!,
  verify: {
    algorithms: ['HS256'],
    cache: true,
    requiredClaims: ['id', 'gen', 'iat', 'exp', 'iss', 'aud'],
    allowedIss: 'roja',
    allowedAud: 'roja-api',
    maxAge: 3600 * 1000
  }
})

class HttpError extends Error {
  constructor (readonly statusCode: number) {
    super(String(statusCode))
  }
}

/** Bearer token → the user row, active: the same check Roja runs on every authenticated request. */
async function user (request: FastifyRequest): Promise<Row> {
  const match = /^Bearer +(\S+)$/i.exec(request.headers.authorization ?? '')
  if (!match) throw new HttpError(401)
  let id: string
  try {
    id = app.jwt.verify<{ id: string }>(match[1]).id
  } catch {
    throw new HttpError(401)
  }
  const [row] = await db.all(USER, [id])
  if (!row) throw new HttpError(401)
  if (!row.is_active) throw new HttpError(403)
  return row
}

app.get('/v1/posts', async (request, reply) => {
  const q = request.query as ListQuery
  const page = await list(q, q.creator_id, false)
  links(request, reply, page.limit, page.offset, page.total)
  return { posts: page.posts, total: page.total }
})

app.get('/v1/users/me/posts', async (request, reply) => {
  const me = await user(request)
  const page = await list(request.query as ListQuery, me.id, true)
  links(request, reply, page.limit, page.offset, page.total)
  return { posts: page.posts, total: page.total }
})

app.get('/v1/posts/:postId', async (request, reply) => {
  const [row] = await db.all(BY_ID, [(request.params as { postId: string }).postId])
  if (!row || row.published_at === null || new Date(row.published_at).getTime() > Date.now()) throw new HttpError(404)
  const body = JSON.stringify(toPost(row))
  return reply
    .header('etag', `"${hash('sha256', body, 'base64url').slice(0, 27)}"`)
    .type('application/json; charset=utf-8')
    .send(body)
})

app.post('/v1/posts', async (request, reply) => {
  const me = await user(request)
  if (!me.is_creator) throw new HttpError(403)
  const input = request.body as { type: string; title: string; slug: string; body?: string; tags?: string[] }
  const id = randomUUID()
  const now = new Date().toISOString()
  const tags = [...new Set((input.tags ?? []).map(t => t.toLowerCase()))]
  const body = input.body ?? ''
  const values = [id, me.id, input.type, input.slug, input.title, body, words(body), JSON.stringify(tags), null, now, now, now, now]
  let row: Row
  if (postgres) [row] = await db.all(CREATE_POST, values)
  else {
    const statements: Statement[] = [[INSERT_POST, values]]
    if (tags.length > 0) { statements.push([`insert into "post_tag" ("post_id", "tag") values ${tags.map(() => '(?, ?)').join(', ')}`, tags.flatMap(tag => [id, tag])]) }
    statements.push([BY_ID, [id]])
    ;[row] = await db.transaction(statements)
  }
  return reply.code(201).header('location', `/v1/posts/${id}`).send(toPost(row))
})

app.post('/v1/posts/:postId/comments', async (request, reply) => {
  const me = await user(request)
  const { postId } = request.params as { postId: string }
  const { text } = request.body as { text: string }
  const id = randomUUID()
  const now = new Date().toISOString()
  let row: Row | undefined
  if (postgres) {
    const [alertId, mailId] = [randomUUID(), randomUUID()]
    ;[row] = await db.all(CREATE_COMMENT, [
      postId, me.id, now, alertId, 'comment', ...ALERT_MESSAGE, now, me.id, me.id, mailId, 'New comment on your post', now, now, id, me.id, text, now, now
    ])
  } else {
    // Roja's steps: the post as the caller may see it, the comment, the creator's alert and e-mail, the read-back
    row = db.atomically!(run => {
      const [post] = run(BY_ID, [postId])
      if (!post || (post.creator_id !== me.id && (post.published_at === null || Date.parse(post.published_at) > Date.now()))) return undefined
      run(`${INSERT_COMMENT} values (?, ?, ?, ?, ?, ?)`, [id, postId, me.id, text, now, now])
      const alertId = randomUUID()
      run(SQLITE_ALERT, [postId, me.id, now, alertId, 'comment', ...ALERT_MESSAGE, now, me.id, me.id])
      run(SQLITE_MAIL, [postId, me.id, now, alertId, randomUUID(), 'New comment on your post', now, now])
      return run(`select ${COMMENT_COLUMNS} from "comment" ${COMMENT_PEOPLE} where "comment"."post_id" = ? and "comment"."id" = ?`, [postId, id])[0]
    })
  }
  if (!row) throw new HttpError(404)
  return reply.code(201).header('location', `/v1/posts/${postId}/comments/${id}`).send({
    id: row.id,
    post_id: row.post_id,
    author: { id: row.author_id, username: row.username, first_name: row.first_name, last_name: row.last_name },
    text: row.text,
    created_at: time(row.created_at),
    updated_at: time(row.updated_at)
  })
})

app.setErrorHandler((err: Error & { statusCode?: number }, _request, reply) => {
  void reply.code(err.statusCode ?? 500).send({ status: err.statusCode ?? 500 })
})

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0))
})
