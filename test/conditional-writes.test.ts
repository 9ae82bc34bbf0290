import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build, json } from './helper.js'
import { createCreator, type TestUser } from './fixtures.js'
import { createPost } from './post-fixtures.js'

/**
 * Lost updates: many PUTs or PATCHes (and DELETEs) fired together with the same If-Match. The
 * check and the write are one atomic step, so exactly one twin wins and the others get 412.
 */
const TWINS = 12
const ROUNDS = 4

interface Target {
  name: string
  /** makes a fresh resource and answers its URL */
  create: (app: FastifyInstance, owner: TestUser) => Promise<string>
  body: (n: number) => Record<string, unknown>
}

const targets: Target[] = [
  {
    name: 'shop',
    create: async (app, owner) => `/v1/shops/${json(await app.inject({ method: 'POST', url: '/v1/shops', headers: owner.headers, payload: { name: 'Shop' } })).id}`,
    body: n => ({ name: `Shop twin ${n}` })
  },
  {
    name: 'product',
    create: async (app, owner) => {
      const shop = json(await app.inject({ method: 'POST', url: '/v1/shops', headers: owner.headers, payload: { name: 'Shop' } }))
      const product = json(await app.inject({ method: 'POST', url: `/v1/shops/${shop.id}/products`, headers: owner.headers, payload: { name: 'Thing', price_cents: 100, currency: 'EUR' } }))
      return `/v1/shops/${shop.id}/products/${product.id}`
    },
    body: n => ({ name: `Thing twin ${n}`, price_cents: 100 + n, currency: 'EUR' })
  },
  {
    name: 'profile',
    create: async () => '/v1/profiles/me',
    body: n => ({ first_name: `Twin ${n}` })
  },
  {
    name: 'post',
    create: async (app, owner) => `/v1/posts/${(await createPost(app, owner)).id}`,
    body: n => ({ title: `Post twin ${n}`, type: 'ARTICLE', tags: [`t${n}`, 'shared'] })
  },
  {
    name: 'comment',
    create: async (app, owner) => {
      const post = await createPost(app, owner)
      const comment = json(await app.inject({ method: 'POST', url: `/v1/posts/${post.id}/comments`, headers: owner.headers, payload: { text: 'first' } }))
      return `/v1/posts/${post.id}/comments/${comment.id}`
    },
    body: n => ({ text: `twin ${n}` })
  },
  {
    name: 'review',
    create: async (app, owner) => {
      const post = await createPost(app, owner)
      const review = await created(app, owner, `/v1/posts/${post.id}/reviews`, { rating: 3 })
      return `/v1/posts/${post.id}/reviews/${review.id}`
    },
    body: n => ({ rating: (n % 5) + 1, text: `twin ${n}` })
  },
  {
    name: 'class',
    create: async (app, owner) => `/v1/classes/${(await created(app, owner, '/v1/classes', { name: 'Class' })).id}`,
    body: n => ({ name: `Class twin ${n}` })
  },
  {
    name: 'student',
    create: async (app, owner) => {
      const cls = await created(app, owner, '/v1/classes', { name: 'Class' })
      const student = await created(app, owner, `/v1/classes/${cls.id}/students`, { first_name: 'Ann', sex: 'F' })
      return `/v1/classes/${cls.id}/students/${student.id}`
    },
    body: n => ({ first_name: `Twin ${n}`, sex: 'X' })
  },
  {
    name: 'chapter',
    create: async (app, owner) => `/v1/chapters/${(await chapterOf(app, owner)).id}`,
    body: n => ({ title: `Chapter twin ${n}`, position: 1 })
  },
  {
    name: 'lesson',
    create: async (app, owner) => {
      const chapter = await chapterOf(app, owner)
      const lesson = await created(app, owner, `/v1/courses/${chapter.course_id}/chapters/${chapter.id}/lessons`, { title: 'Lesson' })
      return `/v1/lessons/${lesson.id}`
    },
    body: n => ({ title: `Lesson twin ${n}`, body: `text ${n}` })
  }
]

/** A chapter of a new course of `owner`'s. */
async function chapterOf (app: FastifyInstance, owner: TestUser) {
  const course = await createPost(app, owner, { type: 'COURSE' })
  return created(app, owner, `/v1/courses/${course.id}/chapters`, { title: 'Chapter' })
}

/** The resource a POST by `owner` made. */
async function created (app: FastifyInstance, owner: TestUser, url: string, payload: object) {
  return json(await app.inject({ method: 'POST', url, headers: owner.headers, payload }))
}

// A PATCH merges inside the transaction that checks If-Match, so its twins race like PUT's (each
// PUT body here is a merge patch too).
for (const target of targets) {
  for (const method of ['PUT', 'PATCH'] as const) {
    t.test(`${target.name}: ${TWINS} ${method} requests with the same If-Match, exactly one succeeds`, async (t) => {
      const app = await build(t)
      for (let round = 1; round <= ROUNDS; round++) {
        const owner = await createCreator(app)
        const url = await target.create(app, owner)
        const read = await app.inject({ method: 'GET', url, headers: owner.headers })
        t.equal(read.statusCode, 200)
        const headers = { ...owner.headers, 'if-match': String(read.headers.etag) }
        const answers = await Promise.all(Array.from({ length: TWINS }, (_, n) =>
          app.inject({ method, url, headers, payload: target.body(n) })))
        const statuses = answers.map(a => a.statusCode)
        t.equal(statuses.filter(s => s === 200).length, 1, `round ${round}: one 200 (${statuses.join(' ')})`)
        t.equal(statuses.filter(s => s === 412).length, TWINS - 1, `round ${round}: the rest 412`)
        const winner = answers.find(a => a.statusCode === 200)!
        const now = await app.inject({ method: 'GET', url, headers: owner.headers })
        t.same(json(now), json(winner), `round ${round}: what is stored is the winner's write`)
      }
    })
  }
}

for (const target of targets.filter(x => x.name !== 'profile')) {
  t.test(`${target.name}: a PUT and a DELETE with the same If-Match, only one happens`, async (t) => {
    const app = await build(t)
    for (let round = 1; round <= ROUNDS; round++) {
      const owner = await createCreator(app)
      const url = await target.create(app, owner)
      const read = await app.inject({ method: 'GET', url, headers: owner.headers })
      const headers = { ...owner.headers, 'if-match': String(read.headers.etag) }
      const answers = await Promise.all([
        ...Array.from({ length: TWINS / 2 }, (_, n) => app.inject({ method: 'PUT', url, headers, payload: target.body(n) })),
        ...Array.from({ length: TWINS / 2 }, () => app.inject({ method: 'DELETE', url, headers }))
      ])
      const wins = answers.filter(a => a.statusCode === 200 || a.statusCode === 204)
      t.equal(wins.length, 1, `round ${round}: one change (${answers.map(a => a.statusCode).join(' ')})`)
      t.ok(answers.every(a => [200, 204, 404, 412].includes(a.statusCode)), `round ${round}: the others are 412 (or 404 once deleted)`)
    }
  })
}
