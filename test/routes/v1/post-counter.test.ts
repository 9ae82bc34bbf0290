import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { sql } from '../../../src/db/kysely.js'
import t, { type Test } from 'tap'
import { build, dialect, json } from '../../helper.js'
import { createCreator, createUser } from '../../fixtures.js'
import { createPost } from '../../post-fixtures.js'
import { countPublishedPosts } from '../../../src/domain/post-counter.js'
import { seed } from '../../../scripts/seed.js'
import { writeTimeIso } from '../../../src/db/clock.js'

const FUTURE = '2099-01-01T00:00:00Z'
const PAST = '2020-01-01T00:00:00Z'

/** The counter (its slots summed by type), and what a full count says they should be (posts with a published_at, by type). */
async function counterAndTruth (app: FastifyInstance) {
  const counter = await app.db.selectFrom('post_counter').select(['type', sql<number>`sum(published)`.as('published')])
    .groupBy('type').having(sql`sum(published)`, '<>', 0).orderBy('type').execute()
  const truth = await app.db.selectFrom('post').select(['type', sql<number>`count(*)`.as('published')])
    .where('published_at', 'is not', null).groupBy('type').orderBy('type').execute()
  return {
    counter: counter.map(r => ({ type: r.type, published: Number(r.published) })),
    truth: truth.map(r => ({ type: r.type, published: Number(r.published) }))
  }
}

/** The list totals (v1, v1 by type, v2) against a plain count of the published posts. */
async function checkExact (t: Test, app: FastifyInstance, expected: { all: number, article: number }, why: string) {
  const { counter, truth } = await counterAndTruth(app)
  t.same(counter, truth, `${why}: the counter equals a full count`)
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/posts' })).total, expected.all, `${why}: v1 total`)
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/posts?type=ARTICLE' })).total, expected.article, `${why}: v1 total by type`)
  t.equal(json(await app.inject({ method: 'GET', url: '/v2/posts' })).total, expected.all, `${why}: v2 total`)
}

t.test('the public total stays exact through create, draft, scheduled, publish, type change and delete', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  await checkExact(t, app, { all: 0, article: 0 }, 'no posts')

  const a = await createPost(app, creator, { type: 'ARTICLE' })
  const c = await createPost(app, creator, { type: 'COURSE' })
  await checkExact(t, app, { all: 2, article: 1 }, 'two published')

  const draft = await createPost(app, creator, { type: 'ARTICLE', published_at: null })
  const scheduled = await createPost(app, creator, { type: 'ARTICLE', published_at: FUTURE })
  await checkExact(t, app, { all: 2, article: 1 }, 'a draft and a scheduled post are not counted')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/creators/${creator.id}/posts` })).total, 2, 'the creator\'s public list counts the published')
  const own = await app.inject({ method: 'GET', url: '/v1/users/me/posts', headers: creator.headers })
  t.equal(json(own).total, 4, 'the creator\'s own list still counts all four')

  const put = (id: string, body: Record<string, unknown>) =>
    app.inject({ method: 'PUT', url: `/v1/posts/${id}`, headers: creator.headers, payload: { title: 'Changed', ...body } })
  t.equal((await put(a.id, { type: 'ARTICLE', published_at: null })).statusCode, 200)
  await checkExact(t, app, { all: 1, article: 0 }, 'published → draft')
  t.equal((await put(draft.id, { type: 'ARTICLE', published_at: PAST })).statusCode, 200)
  await checkExact(t, app, { all: 2, article: 1 }, 'draft → published')
  t.equal((await put(draft.id, { type: 'ARTICLE', published_at: FUTURE })).statusCode, 200)
  await checkExact(t, app, { all: 1, article: 0 }, 'published → scheduled')
  t.equal((await put(c.id, { type: 'ARTICLE' })).statusCode, 200)
  await checkExact(t, app, { all: 1, article: 1 }, 'a type change moves the post between counts')
  t.equal((await put(c.id, { type: 'ARTICLE', body: 'only the body' })).statusCode, 200)
  await checkExact(t, app, { all: 1, article: 1 }, 'an edit that changes neither type nor published_at')

  // A scheduled post whose time comes is counted without any write: the counter already holds it.
  await app.db.updateTable('post').set({ published_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', scheduled.id).execute()
  await checkExact(t, app, { all: 2, article: 2 }, 'a scheduled post whose time has come')

  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${c.id}`, headers: creator.headers })).statusCode, 204)
  await checkExact(t, app, { all: 1, article: 1 }, 'after a delete')
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${a.id}`, headers: creator.headers })).statusCode, 204)
  await checkExact(t, app, { all: 1, article: 1 }, 'deleting a draft leaves the count as it was')
})

const DAY_MS = 86_400_000

/** Every reader instant at which the total differs from a full count of the posts published by then: `instant (type): got ≠ want`. */
async function totalsOffAt (app: FastifyInstance, instants: number[]): Promise<string[]> {
  const off: string[] = []
  for (const at of instants) {
    const now = new Date(at).toISOString()
    for (const type of [undefined, 'ARTICLE'] as const) {
      const truth = await app.db.selectFrom('post').select(sql<number>`count(*)`.as('n')).where('published_at', '<=', now)
        .$if(type !== undefined, q => q.where('type', '=', type!)).executeTakeFirstOrThrow()
      const got = await countPublishedPosts(app.db, now, type)
      if (got !== Number(truth.n)) off.push(`${now} (${type ?? 'all'}): ${got} ≠ ${Number(truth.n)}`)
    }
  }
  return off
}

t.test('scheduled posts are counted exactly at every instant, on both sides of each day boundary, before and after they move', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS
  const at = (ms: number) => new Date(ms).toISOString()
  // Due today, tomorrow, on either side of the day after tomorrow (where the count moves from the index to post_schedule), later, far later.
  const due = [Date.now() + 60_000, today + DAY_MS, today + 2 * DAY_MS - 1, today + 2 * DAY_MS, today + 2 * DAY_MS + 1,
    today + 3 * DAY_MS - 1, today + 3 * DAY_MS, today + 5 * DAY_MS + DAY_MS / 2, Date.parse(FUTURE)]
  const posts = []
  for (const [i, ms] of due.entries()) posts.push(await createPost(app, creator, { type: i % 2 ? 'COURSE' : 'ARTICLE', published_at: at(ms) }))
  await createPost(app, creator)
  await createPost(app, creator, { published_at: null })
  const instants = [Date.now(), ...due.flatMap(ms => [ms - 1, ms, ms + 1]), today + DAY_MS - 1, today + 4 * DAY_MS, Date.parse(FUTURE) + 1000 * DAY_MS]
  t.same(await totalsOffAt(app, instants), [], 'as written')
  const buckets = await app.db.selectFrom('post_schedule').select(['day', sql<number>`sum(scheduled)`.as('n')]).groupBy('day').orderBy('day').execute()
  t.ok(buckets.some(b => b.day === '2099-01-01' && Number(b.n) === 1), 'a post due on a later day is counted in its day\'s row')

  const put = (id: string, body: Record<string, unknown>) =>
    app.inject({ method: 'PUT', url: `/v1/posts/${id}`, headers: creator.headers, payload: { title: 'Moved', type: 'ARTICLE', ...body } })
  t.equal((await put(posts[7].id, { published_at: at(today + 2 * DAY_MS + 5) })).statusCode, 200, 'rescheduled nearer')
  t.equal((await put(posts[1].id, { published_at: at(today + 9 * DAY_MS) })).statusCode, 200, 'rescheduled further')
  t.equal((await put(posts[8].id, { type: 'COURSE', published_at: FUTURE })).statusCode, 200, 'a far post changes type')
  t.equal((await put(posts[3].id, { published_at: PAST })).statusCode, 200, 'published early')
  t.equal((await put(posts[5].id, { published_at: null })).statusCode, 200, 'back to a draft')
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${posts[6].id}`, headers: creator.headers })).statusCode, 204)
  t.same(await totalsOffAt(app, [...instants, today + 9 * DAY_MS - 1, today + 9 * DAY_MS]), [], 'after moves, a type change and a delete')
})

t.test('a failed write leaves the counter as it was (same transaction)', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  await createPost(app, creator, { slug: 'taken' })
  const clash = await app.inject({ method: 'POST', url: '/v1/posts', headers: creator.headers, payload: { title: 'x', type: 'ARTICLE', slug: 'taken' } })
  t.equal(clash.statusCode, 409)
  await t.rejects(app.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('post').execute()
    throw new Error('rolled back')
  }))
  await checkExact(t, app, { all: 1, article: 1 }, 'after a conflict and a rolled-back delete')
})

t.test('deleting a creator removes their posts from the count (foreign-key cascade)', async (t) => {
  const app = await build(t)
  const gone = await createCreator(app)
  const stays = await createCreator(app)
  await createPost(app, gone)
  await createPost(app, gone, { type: 'COURSE' })
  await createPost(app, stays)
  await checkExact(t, app, { all: 3, article: 2 }, 'before')
  await app.db.deleteFrom('user').where('id', '=', gone.id).execute()
  await checkExact(t, app, { all: 1, article: 1 }, 'after the cascade')
})

t.test('filtered lists still count what they match', async (t) => {
  const app = await build(t)
  const one = await createCreator(app)
  const two = await createCreator(app)
  await createPost(app, one, { tags: ['x'] })
  await createPost(app, one, { tags: ['x', 'y'], type: 'COURSE' })
  await createPost(app, two, { tags: ['y'] })
  await createPost(app, two, { tags: ['x'], published_at: FUTURE })
  const total = async (query: string) => json(await app.inject({ method: 'GET', url: `/v1/posts?${query}` })).total
  t.equal(await total(`creator_id=${one.id}`), 2)
  t.equal(await total(`creator_id=${two.id}`), 1, 'the scheduled post is not counted')
  t.equal(await total('tags=x'), 2)
  t.equal(await total('tags=x,y'), 1)
  t.equal(await total('type=COURSE'), 1)
  t.equal(await total(`type=ARTICLE&creator_id=${two.id}`), 1)
})

t.test('the seeder keeps the counter right', async (t) => {
  const app = await build(t)
  await createUser(app)
  const result = await seed(app.db, { posts: 500, users: 20, quiet: true, hashCost: app.config.PASSWORD_HASH_COST })
  t.equal(result.posts, 500)
  const { counter, truth } = await counterAndTruth(app)
  t.same(counter, truth, 'the counter equals a full count after seeding')
  const now = writeTimeIso()
  const published = await app.db.selectFrom('post').select(sql<number>`count(*)`.as('n')).where('published_at', '<=', now).executeTakeFirstOrThrow()
  t.equal(await countPublishedPosts(app.db, now), Number(published.n))
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/posts' })).total, Number(published.n), 'the list total')
  t.ok(Number(published.n) > 0 && Number(published.n) < 500, 'seeded posts are mixed: published, drafts, scheduled')
})

t.test('totals stay exact under concurrent writers: inserts, deletes, publishing and type changes at once', async (t) => {
  const app = await build(t)
  const creators = await Promise.all([createCreator(app), createCreator(app), createCreator(app)])
  const kinds = [{}, { published_at: null }, { published_at: FUTURE }, { type: 'COURSE' }, { published_at: PAST }]
  const posts = await Promise.all(Array.from({ length: 60 }, (_, i) => createPost(app, creators[i % 3], kinds[i % kinds.length])))
  const byId = new Map(posts.map((p, i) => [p.id, creators[i % 3]]))
  // One burst of every kind of write, interleaved: a pool of connections runs them concurrently on PostgreSQL.
  const writes = posts.map((p, i) => {
    const owner = byId.get(p.id)!
    const put = (body: Record<string, unknown>) => app.inject({ method: 'PUT', url: `/v1/posts/${p.id}`, headers: owner.headers, payload: { title: p.title, type: p.type, ...body } })
    if (i % 4 === 0) return app.inject({ method: 'DELETE', url: `/v1/posts/${p.id}`, headers: owner.headers })
    if (i % 4 === 1) return put({ published_at: PAST })
    if (i % 4 === 2) return put({ type: p.type === 'ARTICLE' ? 'COURSE' : 'ARTICLE' })
    return createPost(app, owner, kinds[i % kinds.length]).then(() => ({ statusCode: 201 }))
  })
  const statuses = (await Promise.all(writes)).map(r => r.statusCode)
  t.ok(statuses.every(s => s === 200 || s === 201 || s === 204), 'every write succeeded')
  const now = writeTimeIso()
  const fresh = async (type?: string) => Number((await app.db.selectFrom('post').select(sql<number>`count(*)`.as('n'))
    .where('published_at', '<=', now).$if(type !== undefined, q => q.where('type', '=', type as 'ARTICLE' | 'COURSE')).executeTakeFirstOrThrow()).n)
  const all = await fresh()
  const article = await fresh('ARTICLE')
  t.ok(all > 0 && article > 0 && article < all, `a mix survived (${article} of ${all} are articles)`)
  await checkExact(t, app, { all, article }, 'after the concurrent burst')
})

if (dialect === 'postgres') {
  /** An app whose ARTICLE type has its first slot, a published post row to insert straight into the table, and the type's slot count. */
  async function oneSlot (t: Test) {
    const app = await build(t)
    const creator = await createCreator(app)
    const row = (title: string) => ({
      id: randomUUID(),
      creator_id: creator.id,
      type: 'ARTICLE' as const,
      slug: title,
      title,
      body: '',
      tags: '[]',
      media_url: null,
      published_at: PAST,
      created_at: PAST,
      updated_at: PAST,
      sort_at: PAST
    })
    await createPost(app, creator) // the type's first slot exists
    const slots = async () => (await app.db.selectFrom('post_counter').select('slot').where('type', '=', 'ARTICLE').execute()).length
    return { app, row, slots }
  }

  t.test('a post writer never waits for another open writer\'s counter row (PostgreSQL)', async (t) => {
    const { app, row, slots } = await oneSlot(t)
    await app.db.transaction().execute(async (first) => {
      await first.insertInto('post').values(row('first')).execute()
      // `first` holds its slot until it commits; a second writer must not queue behind it.
      await app.db.transaction().execute(async (second) => {
        await sql`set local lock_timeout = '2s'`.execute(second)
        await second.insertInto('post').values(row('second')).execute()
      })
    })
    const count = await slots()
    t.ok(count >= 2, `the second writer took a slot of its own (${count} slots)`)
    await checkExact(t, app, { all: 3, article: 3 }, 'after both committed')
  })

  t.test('two writers that both find every slot held open a slot each, neither waiting for the other (PostgreSQL)', async (t) => {
    const { app, row, slots } = await oneSlot(t)
    await app.db.transaction().execute(async (first) => {
      await first.insertInto('post').values(row('first')).execute() // holds the only slot
      await app.db.transaction().execute(async (second) => {
        await second.insertInto('post').values(row('second')).execute() // opens a slot, holds it uncommitted
        // The third sees neither uncommitted slot. Numbered max(slot) + 1 (before 2026_11_25_0001) it took the
        // second's number and queued behind it; numbered from the sequence it gets one of its own.
        await app.db.transaction().execute(async (third) => {
          await sql`set local lock_timeout = '2s'`.execute(third)
          await third.insertInto('post').values(row('third')).execute()
        })
      })
    })
    t.equal(await slots(), 3, 'three slots: the first, and one each for the writers that found it held')
    await checkExact(t, app, { all: 4, article: 4 }, 'after all three committed')
  })
}
