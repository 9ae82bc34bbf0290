import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { sql } from '../../../src/db/kysely.js'
import { build, dialect, json, recordStatements } from '../../helper.js'
import { createCreator, createUser, type TestUser } from '../../fixtures.js'
import { MISSING, createPost } from '../../post-fixtures.js'

/** Rows a comment or review create writes, counted: a refused create must leave them as they were. */
async function written (app: FastifyInstance) {
  const count = async (table: 'comment' | 'review' | 'alert' | 'outbox_message') =>
    Number((await app.db.selectFrom(table).select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
  return { comments: await count('comment'), reviews: await count('review'), alerts: await count('alert'), mails: await count('outbox_message') }
}

const send = (app: FastifyInstance, user: TestUser, postId: string, kind: 'comments' | 'reviews', i = 0) => app.inject({
  method: 'POST',
  url: `/v1/posts/${postId}/${kind}`,
  headers: user.headers,
  payload: kind === 'comments' ? { text: `comment ${i}` } : { rating: 1 + (i % 5), text: `review ${i}` }
})

for (const kind of ['comments', 'reviews'] as const) {
  t.test(`POST ${kind}: a missing or hidden post is 404 PostNotFound and writes nothing`, async t => {
    const app = await build(t)
    const creator = await createCreator(app, { verified: true })
    const reader = await createUser(app)
    const draft = await createPost(app, creator, { published_at: null })
    const scheduled = await createPost(app, creator, { published_at: '2999-01-01T00:00:00Z' })
    const before = await written(app)
    for (const [postId, what] of [[MISSING, 'a missing post'], [draft.id, 'a draft'], [scheduled.id, 'a scheduled post']]) {
      const res = await send(app, reader, postId, kind)
      t.equal(res.statusCode, 404, what)
      t.match(res.headers['content-type'], /^application\/problem\+json/)
      t.match(json(res), { status: 404, code: 'PostNotFound', detail: `no post with id ${postId}` })
    }
    t.same(await written(app), before, 'no row of any refused create')
    t.equal((await send(app, creator, draft.id, kind)).statusCode, 201, 'the creator may write under a draft')
    t.same(await written(app), { ...before, [kind]: before[kind] + 1 }, "and alerts nobody: it is the creator's own post")
  })

  t.test(`POST ${kind}: the alert and e-mail tell of the ${kind === 'comments' ? 'comment' : 'review'}, as before`, async t => {
    const app = await build(t)
    const creator = await createCreator(app, { verified: true })
    const reader = await createUser(app)
    const title = 'It\'s "quoted" — ünïcode & <b>'
    const post = await createPost(app, creator, { title })
    const res = await send(app, reader, post.id, kind)
    t.equal(res.statusCode, 201)
    const item = json(res)
    const noun = kind === 'comments' ? 'comment' : 'review'
    const alerts = await app.db.selectFrom('alert').selectAll().execute()
    t.match(alerts, [{
      user_id: creator.id, kind: noun, post_id: post.id, sent_at: null, message: `${reader.username} left a ${noun} on your post "${title}"`
    }])
    t.equal(alerts[0].review_id, kind === 'reviews' ? item.id : null, 'a review alert names its review')
    const mails = await app.db.selectFrom('outbox_message').selectAll().where('alert_id', 'is not', null).execute()
    t.match(mails, [{
      to_address: creator.email, subject: `New ${noun} on your post`, body: alerts[0].message, alert_id: alerts[0].id, attempts: 0, sent_at: null
    }])
    const row = await app.db.selectFrom(kind === 'comments' ? 'comment' : 'review').select('created_at').where('id', '=', item.id).executeTakeFirstOrThrow()
    t.ok(row.created_at < alerts[0].created_at && alerts[0].created_at < mails[0].created_at, 'written in that order, on the write clock')
    t.same(json(await app.inject({ method: 'GET', url: res.headers.location as string })), item, 'the created answer is the item as read')

    const unverified = await createPost(app, await createCreator(app), { title: 'quiet' })
    t.equal((await send(app, reader, unverified.id, kind)).statusCode, 201)
    t.equal((await app.db.selectFrom('alert').select('id').where('post_id', '=', unverified.id).execute()).length, 1, 'an alert')
    t.equal((await app.db.selectFrom('outbox_message').select('id').where('alert_id', 'is not', null).execute()).length, 1,
      'but no e-mail to an unverified address')
  })

  t.test(`POST ${kind}: 50 concurrent writers on one post, rows exact, never a 500`, async t => {
    const app = await build(t)
    const creator = await createCreator(app, { verified: true })
    const post = await createPost(app, creator)
    // 25 users, each twice at once: comments all land; a user's second review is 409 Conflict
    const users = await Promise.all(Array.from({ length: 25 }, () => createUser(app)))
    const before = await written(app)
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => send(app, users[i % 25], post.id, kind, i)))
    const statuses = answers.map(a => a.statusCode)
    t.notOk(statuses.some(s => s >= 500), 'never a 500')
    const created = kind === 'comments' ? 50 : 25
    t.equal(statuses.filter(s => s === 201).length, created)
    t.equal(statuses.filter(s => s === 409).length, 50 - created)
    for (const a of answers.filter(a => a.statusCode === 409)) {
      t.match(a.headers['content-type'], /^application\/problem\+json/)
      t.match(json(a), { status: 409, code: 'Conflict', detail: 'you have already reviewed this post' })
    }
    const ids = answers.filter(a => a.statusCode === 201).map(a => json(a).id).sort()
    const table = kind === 'comments' ? 'comment' : 'review'
    t.same((await app.db.selectFrom(table).select('id').where('post_id', '=', post.id).execute()).map(r => r.id).sort(), ids, 'the created rows only')
    t.same(await written(app), { ...before, [kind]: created, alerts: created, mails: before.mails + created },
      'one alert and one e-mail a created row, none of a refused one')
  })

  t.test(`POST ${kind}: a post deleted while the create is under way is 404 PostNotFound, never a 500`, async t => {
    const app = await build(t)
    const creator = await createCreator(app, { verified: true })
    const reader = await createUser(app)
    const post = await createPost(app, creator)
    const before = await written(app)
    // The delete holds the post's row until it commits: on PostgreSQL the create has read the post by
    // then and waits on it in its foreign-key check; SQLite takes one writer at a time, so it waits first.
    const answer = await app.db.transaction().execute(async trx => {
      await trx.deleteFrom('post').where('id', '=', post.id).execute()
      const pending = send(app, reader, post.id, kind)
      while (dialect === 'postgres') {
        await new Promise(resolve => setTimeout(resolve, 20))
        // the create's one statement (its text as pg_stat_activity keeps it: the first kilobyte)
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where wait_event_type = 'Lock' and query like 'with "parent" as %'`.execute(app.db)
        if (rows[0].n > 0) break
      }
      return { pending }
    })
    const res = await answer.pending
    t.equal(res.statusCode, 404)
    t.match(json(res), { status: 404, code: 'PostNotFound', detail: `no post with id ${post.id}` })
    t.same(await written(app), before, 'nothing written')
  })

  t.test(`POST ${kind} costs the account read and, on PostgreSQL, one statement`, async t => {
    const app = await build(t)
    const creator = await createCreator(app, { verified: true })
    const post = await createPost(app, creator)
    const reader = await createUser(app)
    const statements = recordStatements(t, app)
    const res = await send(app, reader, post.id, kind)
    t.equal(res.statusCode, 201)
    t.comment(`statements per ${kind} create on ${dialect}: ${statements.length}`)
    t.match(statements[0], /from "user" where "id" = /, 'first the account, by primary key')
    if (dialect === 'postgres') t.equal(statements.length, 2, 'then one statement: the row, the alert, its e-mail and the read-back')
    else t.ok(statements.length > 2, 'SQLite, in process, keeps its transaction')
  })
}

t.test('POST reviews: a second review by one user is 409 and writes nothing', async t => {
  const app = await build(t)
  const creator = await createCreator(app, { verified: true })
  const reader = await createUser(app)
  const post = await createPost(app, creator)
  t.equal((await send(app, reader, post.id, 'reviews')).statusCode, 201)
  const before = await written(app)
  const again = await send(app, reader, post.id, 'reviews', 1)
  t.equal(again.statusCode, 409)
  t.match(json(again), { status: 409, code: 'Conflict', detail: 'you have already reviewed this post' })
  t.same(await written(app), before, 'no review, alert or e-mail of the refused one')
})
