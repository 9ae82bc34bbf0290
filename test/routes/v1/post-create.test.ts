import t from 'tap'
import { build, dialect, json, recordStatements } from '../../helper.js'
import { createCreator } from '../../fixtures.js'

t.test('50 concurrent creates of one slug by one creator: one 201, 49 Conflict problems, nothing half-written', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const create = (i: number) => app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: creator.headers,
    payload: { type: 'ARTICLE', title: `Race ${i}`, slug: 'the-race', body: `body ${i}`, tags: ['Race', `n${i}`] }
  })
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => create(i)))
  const statuses = answers.map(a => a.statusCode)
  t.equal(statuses.filter(s => s === 201).length, 1, 'exactly one 201')
  t.equal(statuses.filter(s => s === 409).length, 49, 'the others 409')
  t.notOk(statuses.some(s => s >= 500), 'never a 500')
  for (const a of answers.filter(a => a.statusCode === 409)) {
    t.match(a.headers['content-type'], /^application\/problem\+json/)
    t.match(json(a), { status: 409, code: 'Conflict', detail: 'you already have a post with the slug the-race' })
  }
  const winner = json(answers.find(a => a.statusCode === 201)!)
  const posts = await app.db.selectFrom('post').select(['id', 'tags']).where('creator_id', '=', creator.id).execute()
  t.same(posts.map(p => p.id), [winner.id], 'one post written')
  const tags = await app.db.selectFrom('post_tag').select(['post_id', 'tag']).orderBy('tag').execute()
  t.same(tags, winner.tags.map((tag: string) => ({ post_id: winner.id, tag })).sort((a: any, b: any) => a.tag.localeCompare(b.tag)),
    'its tags, and no tag of a refused create')
  t.same(JSON.parse(posts[0].tags), winner.tags)
  const read = await app.inject({ method: 'GET', url: `/v1/posts/${winner.id}` })
  t.same(json(read), winner, 'the created answer is the post as read')
})

t.test('a create of a slug the creator has is 409 and writes nothing; another creator may take it', async t => {
  const app = await build(t)
  const [a, b] = [await createCreator(app), await createCreator(app)]
  const post = (user: typeof a, tags: string[]) => app.inject({
    method: 'POST', url: '/v1/posts', headers: user.headers, payload: { type: 'ARTICLE', title: 'Same', tags }
  })
  t.equal((await post(a, ['x'])).statusCode, 201)
  const again = await post(a, ['y', 'z'])
  t.same([again.statusCode, json(again).code], [409, 'Conflict'])
  t.same(await app.db.selectFrom('post_tag').select('tag').where('tag', 'in', ['y', 'z']).execute(), [], 'no tags of the refused post')
  t.equal((await post(b, ['y'])).statusCode, 201, 'the slug is per creator')
})

t.test('a post create costs the account read and, on PostgreSQL, one statement', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const statements = recordStatements(t, app)
  const res = await app.inject({
    method: 'POST', url: '/v1/posts', headers: creator.headers, payload: { type: 'ARTICLE', title: 'Counted', tags: ['a', 'b'] }
  })
  t.equal(res.statusCode, 201)
  t.comment(`statements per post create on ${dialect}: ${statements.length}`)
  for (const s of statements) t.comment(s.replace(/\s+/g, ' ').slice(0, 150))
  t.match(statements[0], /from "user" where "id" = /, 'first the account, by primary key')
  if (dialect === 'postgres') t.equal(statements.length, 2, 'then one statement: the post, its tags and its read-back')
  else t.ok(statements.length > 2, 'SQLite, in process, keeps its transaction')
})
