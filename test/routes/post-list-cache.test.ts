import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import t from 'tap'
import { build, freshDatabase, json } from '../helper.js'
import { createCreator } from '../fixtures.js'
import { createPost, setup } from '../post-fixtures.js'
import { VersionedCache } from '../../src/domain/versioned-cache.js'

/** The public first page, as a client sees it: titles in order, first names, total. */
async function firstPage (app: FastifyInstance, query = '') {
  const res = await app.inject({ method: 'GET', url: `/v1/posts${query}` })
  const body = json(res)
  return { status: res.statusCode, titles: body.posts.map((p: { title: string }) => p.title), names: body.posts.map((p: { creator: { first_name: string } }) => p.creator.first_name), total: body.total }
}

const version = async (app: FastifyInstance) =>
  Number((await app.db.selectFrom('data_version').select('version').where('name', '=', 'post_list').executeTakeFirstOrThrow()).version)

t.test('a repeated first page comes from memory while data_version holds, and every write is seen at once', async (t) => {
  const app = await setup(t)
  const creator = await createCreator(app, { firstName: 'Ada' })
  const a = await createPost(app, creator, { title: 'A' })
  t.same(await firstPage(app), { status: 200, titles: ['A'], names: ['Ada'], total: 1 }, 'first read fills the cache')

  // Proof the second read is a hit: change the row but put the version back, and the old page is still served.
  const before = await version(app)
  await app.db.updateTable('post').set({ title: 'A changed behind the triggers\' back' }).where('id', '=', a.id).execute()
  t.equal(await version(app), before + 1, 'a hand-run UPDATE bumps the version (trigger)')
  await app.db.updateTable('data_version').set({ version: before }).where('name', '=', 'post_list').execute()
  t.same((await firstPage(app)).titles, ['A'], 'same version: the cached page')
  await app.db.updateTable('data_version').set({ version: before + 1 }).where('name', '=', 'post_list').execute()
  t.same((await firstPage(app)).titles, ['A changed behind the triggers\' back'], 'a new version: read again')

  const b = await createPost(app, creator, { title: 'B' })
  t.same(await firstPage(app), { status: 200, titles: ['B', 'A changed behind the triggers\' back'], names: ['Ada', 'Ada'], total: 2 }, 'a created post')
  t.same(await firstPage(app, '?type=ARTICLE&limit=1'), { status: 200, titles: ['B'], names: ['Ada'], total: 2 }, 'another key: type and limit')

  const put = await app.inject({ method: 'PUT', url: `/v1/posts/${b.id}`, headers: creator.headers, payload: { title: 'B2', type: 'ARTICLE' } })
  t.equal(put.statusCode, 200)
  t.same((await firstPage(app)).titles, ['B2', 'A changed behind the triggers\' back'], 'an updated post')
  t.same((await firstPage(app, '?type=ARTICLE&limit=1')).titles, ['B2'], 'the other key too')

  const profile = await app.inject({ method: 'PUT', url: '/v1/profiles/me', headers: creator.headers, payload: { first_name: 'Grace', last_name: 'Hopper' } })
  t.equal(profile.statusCode, 200)
  t.same((await firstPage(app)).names, ['Grace', 'Grace'], 'the author\'s new name')

  await app.db.updateTable('user').set({ username: 'renamed' }).where('id', '=', creator.id).execute()
  t.same(json(await app.inject({ method: 'GET', url: '/v1/posts' })).posts.map((p: { creator: { username: string } }) => p.creator.username), ['renamed', 'renamed'], 'the author\'s new username')

  t.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${b.id}`, headers: creator.headers })).statusCode, 204)
  t.same(await firstPage(app), { status: 200, titles: ['A changed behind the triggers\' back'], names: ['Grace'], total: 1 }, 'a deleted post')
  t.same(await firstPage(app, '?offset=0&limit=10&sort=-created_at'), { status: 200, titles: ['A changed behind the triggers\' back'], names: ['Grace'], total: 1 })
})

t.test('a scheduled post shows up when it comes due, with no write in between', async (t) => {
  const app = await setup(t)
  const creator = await createCreator(app)
  await createPost(app, creator, { title: 'now' })
  // input has whole seconds: due at the start of the second after next
  const due = Math.ceil((Date.now() + 1000) / 1000) * 1000
  await createPost(app, creator, { title: 'scheduled', published_at: new Date(due).toISOString() })
  const early = await firstPage(app)
  t.same(early, { status: 200, titles: ['now'], names: ['Test'], total: 1 }, 'not yet due, and now cached')
  t.same(await firstPage(app), early, 'still before it is due')
  t.equal((await firstPage(app, '?offset=1')).total, 1, 'a later page: the cached total')
  t.equal((await firstPage(app, '?type=ARTICLE&offset=1')).total, 1, 'by type too')
  await new Promise(resolve => setTimeout(resolve, due - Date.now() + 20))
  const late = await firstPage(app)
  t.same(late.titles, ['scheduled', 'now'], 'due: on the first page, without a write')
  t.equal(late.total, 2, 'and counted')
  t.same(await firstPage(app, '?offset=1'), { status: 200, titles: ['now'], names: ['Test'], total: 2 }, 'in a later page\'s total as well')
  t.equal((await firstPage(app, '?type=ARTICLE&offset=1')).total, 2, 'and by type')
  t.equal(json(await app.inject({ method: 'GET', url: '/v2/posts?limit=1' })).total, 2, 'and in v2')
})

t.test('two instances on one database: a write through one is in the other\'s next read', async (t) => {
  const database = await freshDatabase(t, { persistent: true })
  const one = await build(t, { database })
  const two = await build(t, { database })
  const creator = await createCreator(one)
  await createPost(one, creator, { title: 'first' })
  t.same((await firstPage(one)).titles, ['first'], 'instance one caches its page')
  t.same((await firstPage(two)).titles, ['first'], 'instance two caches its own')
  await createPost(two, creator, { title: 'second' })
  t.same(await firstPage(one), { status: 200, titles: ['second', 'first'], names: ['Test', 'Test'], total: 2 }, 'instance one sees the write made through two')
  await two.db.deleteFrom('post').execute()
  t.same(await firstPage(one), { status: 200, titles: [], names: [], total: 0 }, 'and a delete made by hand on the shared database')
})

t.test('VersionedCache holds at most maxWeight, least recently used out first, and never an entry heavier than that', async (t) => {
  const app = await build(t)
  const cache = new VersionedCache<string>('post_list', 10)
  const fills: string[] = []
  const get = (key: string, weight: number) => cache.get(app.db, key, Date.now(), async () => {
    fills.push(key)
    return { value: key.toUpperCase(), until: Infinity, weight }
  })
  t.equal(await get('a', 5), 'A')
  t.equal(await get('b', 5), 'B')
  t.equal(await get('a', 5), 'A', 'a hit')
  t.same(fills, ['a', 'b'], 'ten of ten held: both cached')
  t.equal(await get('c', 1), 'C')
  t.equal(await get('a', 5), 'A', 'a was used last before c, so b went')
  t.equal(await get('b', 5), 'B')
  t.same(fills, ['a', 'b', 'c', 'b'], 'b had been dropped at eleven')
  t.equal(await get('big', 11), 'BIG')
  t.equal(await get('big', 11), 'BIG')
  t.same(fills.slice(4), ['big', 'big'], 'heavier than the whole budget: never cached')
  const until = Date.now() + 60_000
  await cache.get(app.db, 'timed', Date.now(), async () => { fills.push('timed'); return { value: 'T', until, weight: 1 } })
  await cache.get(app.db, 'timed', until - 1, async () => { fills.push('timed'); return { value: 'T', until, weight: 1 } })
  t.same(fills.slice(6), ['timed'], 'a millisecond before until: cached')
  await cache.get(app.db, 'timed', until, async () => { fills.push('timed'); return { value: 'T', until, weight: 1 } })
  t.same(fills.slice(6), ['timed', 'timed'], 'at until: read again')
  await cache.get(app.db, 'timed', until - 1, async () => { fills.push('timed'); return { value: 'T', until: Infinity, weight: 1 } })
  t.same(fills.slice(6), ['timed', 'timed'], 'the same version: cached')
  await sql`update data_version set version = version + 1 where name = 'post_list'`.execute(app.db)
  await cache.get(app.db, 'timed', until - 1, async () => { fills.push('timed'); return { value: 'T', until: Infinity, weight: 1 } })
  t.same(fills.slice(6), ['timed', 'timed', 'timed'], 'a new version: read again')
})

t.test('VersionedCache: concurrent misses of one version share one fill, and nothing else waits on it', async (t) => {
  const app = await build(t)
  const cache = new VersionedCache<string>('post_list', 10)
  let fills = 0
  const gated = () => {
    let open!: () => void
    const gate = new Promise<void>(resolve => { open = resolve })
    return { open, fill: async (value: string, until = Infinity) => { fills++; await gate; return { value, until, weight: 1 } } }
  }
  const settle = () => new Promise(resolve => setTimeout(resolve, 50)) // every caller has read the version by then

  const first = gated()
  const waiting = Array.from({ length: 20 }, () => cache.get(app.db, 'k', 1000, () => first.fill('one')))
  await settle()
  t.equal(fills, 1, 'twenty misses at once, one fill')
  first.open()
  t.same(await Promise.all(waiting), Array(20).fill('one'), 'all twenty get its value')
  t.equal(await cache.get(app.db, 'k', 1000, async () => { fills++; return { value: 'again', until: Infinity, weight: 1 } }), 'one', 'and it is cached')
  t.equal(fills, 1)

  // a new version does not join a fill begun under the old one
  await sql`update data_version set version = version + 1 where name = 'post_list'`.execute(app.db)
  const old = gated()
  const slow = cache.get(app.db, 'j', 1000, () => old.fill('old'))
  await settle()
  await sql`update data_version set version = version + 1 where name = 'post_list'`.execute(app.db)
  t.equal(await cache.get(app.db, 'j', 1000, async () => { fills++; return { value: 'new', until: Infinity, weight: 1 } }), 'new', 'answered while the old fill still waits')
  old.open()
  t.equal(await slow, 'old')

  // a caller whose clock is past the shared fill's `until` reads for itself
  const due = gated()
  const early = cache.get(app.db, 'd', 1000, () => due.fill('before', 1500))
  await settle()
  const late = cache.get(app.db, 'd', 2000, async () => { fills++; return { value: 'after', until: Infinity, weight: 1 } })
  due.open()
  t.same([await early, await late], ['before', 'after'], 'the later clock does not take the earlier answer')
})
