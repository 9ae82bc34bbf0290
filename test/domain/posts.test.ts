import t from 'tap'
import type { PostCreate, PostListQuery } from '../../schemas/posts.js'
import { createPost, listPosts, updatePost } from '../../src/domain/posts.js'
import { code, openDb, person } from '../domain-db.js'

// The posts' rules where they live (test/domain-db.ts).

const article = (title: string, more: Partial<PostCreate> = {}): PostCreate => ({ type: 'ARTICLE', title, ...more })
const anyone = () => {}

t.test('slugs: derived from the title, unique per creator, kept or derived again on update', async (t) => {
  const db = await openDb(t)
  const [ada, bob] = [await person(db, 'ada'), await person(db, 'bob')]

  const first = await createPost(db, ada, article('Über Café!'))
  t.equal(first.slug, 'uber-cafe', 'lower-case ASCII words joined by -')
  t.equal((await createPost(db, ada, article('!!!'))).slug, 'post', 'a title with no letters or digits')

  t.equal(await code(createPost(db, ada, article('Another', { slug: 'uber-cafe' }))), 'Conflict', 'the same creator: 409')
  const adas = await db.selectFrom('post').select('id').where('creator_id', '=', ada).execute()
  t.equal(adas.length, 2, 'and nothing written')
  t.equal((await createPost(db, bob, article('Über Café'))).slug, 'uber-cafe', 'another creator may take it')

  const kept = await updatePost(db, first.id, ada, article('A new title'), anyone)
  t.equal(kept.slug, 'uber-cafe', 'an absent slug keeps the stored one')
  const derived = await updatePost(db, first.id, ada, article('A new title', { slug: null }), anyone)
  t.equal(derived.slug, 'a-new-title', 'a null slug is derived from the title again')
  const second = await createPost(db, ada, article('Second'))
  t.equal(await code(updatePost(db, second.id, ada, article('Second', { slug: 'a-new-title' }), anyone)), 'Conflict',
    'an update to a slug the creator holds: 409')
  t.equal((await listPosts(db, { limit: 10, offset: 0 }, { creatorId: ada, unpublished: true })).posts.find(p => p.id === second.id)?.slug,
    'second', 'and the post keeps its own')
})

t.test('lists: pages by limit and offset, sorts by any sortable field, totals what the filters match', async (t) => {
  const db = await openDb(t)
  const ada = await person(db, 'ada')
  const titles = ['delta', 'alpha', 'echo', 'charlie', 'bravo']
  for (const title of titles) await createPost(db, ada, article(title, { tags: title < 'c' ? ['early'] : [] }))
  await createPost(db, ada, article('zulu draft', { published_at: null }))
  await createPost(db, ada, article('yankee scheduled', { published_at: '2999-01-01T00:00:00Z' }))
  const page = async (query: Partial<PostListQuery>) => {
    const { posts, total } = await listPosts(db, { limit: 2, offset: 0, ...query } as PostListQuery)
    return { titles: posts.map(p => p.title), total }
  }

  t.same(await page({ sort: 'title' }), { titles: ['alpha', 'bravo'], total: 5 }, 'the first page; drafts and scheduled posts are not public')
  t.same(await page({ sort: 'title', offset: 2 }), { titles: ['charlie', 'delta'], total: 5 }, 'the next page')
  t.same(await page({ sort: 'title', offset: 4 }), { titles: ['echo'], total: 5 }, 'the last page holds what is left')
  t.same(await page({ sort: 'title', offset: 5 }), { titles: [], total: 5 }, 'past the end: empty, the total still told')
  t.same(await page({ sort: '-title', limit: 3 }), { titles: ['echo', 'delta', 'charlie'], total: 5 }, 'a leading - sorts descending')
  t.same(await page({ sort: 'title', tags: 'early' }), { titles: ['alpha', 'bravo'], total: 2 },
    'a filter narrows the page and the total')
  t.same((await page({ limit: 5 })).titles, [...titles].reverse(), 'by default the latest first')

  const own = await listPosts(db, { limit: 10, offset: 0, sort: '-title' }, { creatorId: ada, unpublished: true })
  t.same(own.posts.map(p => p.title).slice(0, 2), ['zulu draft', 'yankee scheduled'], 'the creator\'s own list holds drafts and scheduled posts')
  t.equal(own.total, 7)
})
