import t from 'tap'
import type { Db } from '../../src/db/dialect.js'
import { writeTimeIso } from '../../src/db/clock.js'
import { createComment } from '../../src/domain/comments.js'
import { createPost } from '../../src/domain/posts.js'
import { createReview } from '../../src/domain/reviews.js'
import { code, openDb, person } from '../domain-db.js'

// The alert rule where it lives (test/domain-db.ts): a comment or review on someone's post alerts
// its creator in the same write, one statement on one database and statements in turn on the
// other, so each case runs on both.

const alerts = (db: Db) => db.selectFrom('alert').select(['user_id', 'kind', 'message', 'review_id']).orderBy('created_at').execute()
const mails = (db: Db) => db.selectFrom('outbox_message').select(['to_address', 'subject', 'body'])
  .where('alert_id', 'is not', null).orderBy('created_at').execute()
const count = async (db: Db, table: 'comment' | 'review') =>
  Number((await db.selectFrom(table).select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)

t.test("a comment or review on another's post alerts its creator; the e-mail waits for a verified address", async t => {
  const db = await openDb(t)
  const [ada, bob] = [await person(db, 'ada'), await person(db, 'bob')]
  const post = await createPost(db, ada, { type: 'ARTICLE', title: 'Hello' })

  await createComment(db, post.id, bob, { text: 'hi' })
  t.same(await alerts(db), [{ user_id: ada, kind: 'comment', message: 'bob left a comment on your post "Hello"', review_id: null }],
    'the creator is alerted, naming the actor and the post')
  t.same(await mails(db), [], 'no e-mail while the address is unverified')

  await db.updateTable('user').set({ email_verified_at: writeTimeIso() }).where('id', '=', ada).execute()
  const review = await createReview(db, post.id, bob, { rating: 5 })
  t.same((await alerts(db))[1], { user_id: ada, kind: 'review', message: 'bob left a review on your post "Hello"', review_id: review.id },
    "a review's alert names its review")
  t.same(await mails(db), [{ to_address: 'ada@example.com', subject: 'New review on your post', body: 'bob left a review on your post "Hello"' }],
    'once verified, the alert is e-mailed, no user text in the subject')
})

t.test('acting on your own post alerts nobody', async t => {
  const db = await openDb(t)
  const ada = await person(db, 'ada')
  await db.updateTable('user').set({ email_verified_at: writeTimeIso() }).where('id', '=', ada).execute()
  const post = await createPost(db, ada, { type: 'ARTICLE', title: 'Mine' })
  await createComment(db, post.id, ada, { text: 'a note' })
  await createReview(db, post.id, ada, { rating: 4, text: 'fair' })
  t.equal(await count(db, 'comment'), 1, 'the comment is written')
  t.equal(await count(db, 'review'), 1, 'and the review')
  t.same(await alerts(db), [], 'no alert')
  t.same(await mails(db), [], 'no e-mail')
})

t.test('a post the actor may not see: PostNotFound, and nothing written', async t => {
  const db = await openDb(t)
  const [ada, bob] = [await person(db, 'ada'), await person(db, 'bob')]
  const draft = await createPost(db, ada, { type: 'ARTICLE', title: 'Draft', published_at: null })
  const scheduled = await createPost(db, ada, { type: 'ARTICLE', title: 'Later', published_at: '2999-01-01T00:00:00Z' })
  for (const [name, postId] of [['a draft', draft.id], ['a scheduled post', scheduled.id], ['a missing post', '00000000-0000-4000-8000-000000000000']]) {
    t.equal(await code(createComment(db, postId, bob, { text: 'hi' })), 'PostNotFound', `a comment on ${name}`)
    t.equal(await code(createReview(db, postId, bob, { rating: 3 })), 'PostNotFound', `a review of ${name}`)
  }
  t.equal(await count(db, 'comment'), 0, 'no comment written')
  t.equal(await count(db, 'review'), 0, 'no review written')
  t.same(await alerts(db), [], 'no alert written')
  await createComment(db, draft.id, ada, { text: 'note to self' })
  t.equal(await count(db, 'comment'), 1, 'its creator may comment on a draft')
})
