import t from 'tap'
import { build, json } from '../../helper.js'
import { createCreator, createUser } from '../../fixtures.js'
import { MISSING, backdate, checkListBounds, createPost } from '../../post-fixtures.js'

t.test('GET /v1/creators/{profileId}/posts: the creator\'s published posts, newest activity first', async (t) => {
  const app = await build(t)
  const creator = await createCreator(app)
  const other = await createCreator(app)
  const a = await createPost(app, creator, { title: 'A', tags: ['x'] })
  const b = await createPost(app, creator, { title: 'B', type: 'COURSE' })
  await createPost(app, creator, { title: 'Draft', published_at: null })
  await createPost(app, creator, { title: 'Scheduled', published_at: '2999-01-01T00:00:00Z' })
  await createPost(app, other, { title: 'Other' })
  await backdate(app, a.id, 20)
  await backdate(app, b.id, 10)

  const url = `/v1/creators/${creator.id}/posts`
  const res = await app.inject({ method: 'GET', url })
  t.equal(res.statusCode, 200)
  t.same(json(res).posts.map((p: { title: string }) => p.title), ['B', 'A'], 'drafts, scheduled and other creators\' posts are left out')
  t.equal(json(res).total, 2)
  const titles = async (query: string) => json(await app.inject({ method: 'GET', url: `${url}?${query}` })).posts.map((p: { title: string }) => p.title)
  t.same(await titles('sort=title'), ['A', 'B'])
  t.same(await titles('sort=-title'), ['B', 'A'])
  t.same(await titles('type=COURSE'), ['B'])
  t.same(await titles('tags=x'), ['A'])
  t.equal((await app.inject({ method: 'GET', url: `${url}?creator_id=${other.id}` })).statusCode, 422, 'creator_id is not a parameter here')
  await checkListBounds(t, app, url)
  const page = await app.inject({ method: 'GET', url: `${url}?limit=1` })
  t.equal(page.headers.link, `<${url}?limit=1&offset=1>; rel="next"`)
})

t.test('GET /v1/creators/{profileId}/posts: the creator is checked first', async (t) => {
  const app = await build(t)
  const missing = await app.inject({ method: 'GET', url: `/v1/creators/${MISSING}/posts` })
  t.equal(missing.statusCode, 404)
  t.equal(json(missing).code, 'ProfileNotFound')
  const reader = await createUser(app)
  const notCreator = await app.inject({ method: 'GET', url: `/v1/creators/${reader.id}/posts` })
  t.equal(notCreator.statusCode, 404)
  t.equal(json(notCreator).code, 'ProfileNotCreator')
  t.equal((await app.inject({ method: 'GET', url: '/v1/creators/nobody/posts' })).statusCode, 422)
  const creator = await createCreator(app)
  t.same(json(await app.inject({ method: 'GET', url: `/v1/creators/${creator.id}/posts` })), { posts: [], total: 0 }, 'a creator without posts: an empty list')
})
