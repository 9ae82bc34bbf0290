import type { Static } from '@sinclair/typebox'
import createClient from 'openapi-fetch'
import t from 'tap'
import type { components, paths } from '../client/v1.js'
import type { components as v2components, paths as v2paths } from '../client/v2.js'
import type { TokenResponse } from '../schemas/auth.js'
import type { Media } from '../schemas/media.js'
import type { Post, PostCreate, PostList } from '../schemas/posts.js'
import type { PostCursorPage } from '../schemas/posts-v2.js'
import type { MyProfile, Profile, ProfileCreate } from '../schemas/profiles.js'
import type { Review, ReviewCreate, ReviewList } from '../schemas/reviews.js'
import type { Problem } from '../schemas/problems.js'
import { grantCreator } from '../src/domain/users.js'
import { build } from './helper.js'
import { verifyEmail } from './fixtures.js'

/**
 * The generated client (client/v1.d.ts from openapi/v1.json) must describe the server's own
 * schemas: each check below fails the typecheck when a schema changed and the contract was not
 * re-exported (npm run openapi && npm run client).
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? ([keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false) : false) : false
type S = components['schemas']
const contract: Array<true> = [
  true satisfies Same<S['ProfileCreate'], ProfileCreate>,
  true satisfies Same<S['MyProfile'], MyProfile>,
  true satisfies Same<S['Profile'], Profile>,
  true satisfies Same<S['TokenResponse'], TokenResponse>,
  true satisfies Same<S['PostCreate'], PostCreate>,
  true satisfies Same<S['Post'], Post>,
  true satisfies Same<S['PostList'], PostList>,
  true satisfies Same<S['ReviewCreate'], ReviewCreate>,
  true satisfies Same<S['Review'], Review>,
  true satisfies Same<S['ReviewList'], Static<typeof ReviewList>>,
  true satisfies Same<S['Media'], Media>,
  true satisfies Same<S['Problem'], Problem>,
  true satisfies Same<v2components['schemas']['PostCursorPage'], PostCursorPage>
]

t.test('the generated client drives a whole flow against the server on a loopback port', async (t) => {
  t.equal(contract.length, 13)
  // the generated types describe HTTP; which database answers is not their concern (this runs once)
  const app = await build(t, { database: { url: 'sqlite::memory:' } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const api = createClient<paths>({ baseUrl: `http://127.0.0.1:${port}` })
  const v2 = createClient<v2paths>({ baseUrl: `http://127.0.0.1:${port}` })

  async function signUp (username: string) {
    const body: S['ProfileCreate'] = { username, email: `${username}@example.com`, password: 'correct horse battery staple', first_name: 'Ada' }
    const created = await api.POST('/v1/profiles', { body })
    t.equal(created.response.status, 201, `sign-up ${username}`)
    const token = await api.POST('/v1/auth/token', { body: { username, password: body.password } })
    t.equal(token.response.status, 200)
    t.equal(token.data?.token_type, 'Bearer')
    return { id: created.data!.id, headers: { authorization: `Bearer ${token.data!.access_token}` } }
  }

  const ada = await signUp('ada')
  // Becoming a creator is an operator action (npm run cli -- creator grant ada).
  await grantCreator(app.db, 'ada')

  const draft: S['PostCreate'] = { type: 'ARTICLE', title: 'Hello, contract', tags: ['api'] }
  const created = await api.POST('/v1/posts', { body: draft, headers: ada.headers })
  t.equal(created.response.status, 201)
  const post: S['Post'] | undefined = created.data
  t.equal(post?.title, 'Hello, contract')
  t.equal(post?.creator.username, 'ada')
  t.match(created.response.headers.get('location'), `/v1/posts/${post!.id}`)

  const listed = await api.GET('/v1/posts', { params: { query: { limit: 10, tags: 'api' } } })
  t.equal(listed.response.status, 200)
  t.equal(listed.data?.total, 1)
  t.same(listed.data?.posts.map(p => p.id), [post!.id])

  const byCursor = await v2.GET('/v2/posts', { params: { query: { limit: 1 } } })
  t.same(byCursor.data?.posts.map(p => p.id), [post!.id])
  t.equal(byCursor.data?.next_cursor, null)

  const grace = await signUp('grace')
  // Uploads (below) need a verified address: grace opens the link sign-up mailed her.
  await verifyEmail(app, { id: grace.id, username: 'grace', email: 'grace@example.com' })
  const review: S['ReviewCreate'] = { rating: 5, text: 'Typed all the way down' }
  const reviewed = await api.POST('/v1/posts/{postId}/reviews', { params: { path: { postId: post!.id } }, body: review, headers: grace.headers })
  t.equal(reviewed.response.status, 201)
  t.equal(reviewed.data?.rating, 5)
  t.equal(reviewed.data?.author.username, 'grace')
  const reviews = await api.GET('/v1/posts/{postId}/reviews', { params: { path: { postId: post!.id }, query: {} } })
  t.equal(reviews.data?.total, 1)

  const again = await api.POST('/v1/posts/{postId}/reviews', { params: { path: { postId: post!.id } }, body: review, headers: grace.headers })
  t.equal(again.response.status, 409)
  const problem: S['Problem'] | undefined = again.error
  t.equal(problem?.code, 'Conflict')

  const text = 'plain text, uploaded through the generated client\n'
  const uploaded = await api.POST('/v1/media', {
    headers: grace.headers,
    body: { file: 'notes.txt' },
    // The contract types the part by name; the bytes go as a real multipart file part.
    bodySerializer: (body) => {
      const form = new FormData()
      form.append('file', new Blob([text], { type: 'text/plain' }), body.file)
      return form
    }
  })
  t.equal(uploaded.response.status, 201)
  const media: S['Media'] | undefined = uploaded.data
  t.equal(media?.content_type, 'text/plain')
  t.equal(media?.size, Buffer.byteLength(text))

  const fetched = await api.GET('/v1/media/{mediaId}', { params: { path: { mediaId: media!.id } }, headers: { accept: 'application/json' } })
  t.equal(fetched.response.status, 200)
  t.equal((fetched.data as S['Media'] | undefined)?.sha256, media?.sha256)
})
