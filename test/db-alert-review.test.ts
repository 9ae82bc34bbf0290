import { randomUUID } from 'node:crypto'
import t from 'tap'
import { Migrator } from '../src/db/kysely.js'
import { createDb } from '../src/db/dialect.js'
import { migrations } from '../src/db/migrate.js'
import { writeTimeIso } from '../src/db/clock.js'
import { freshDatabase, whileMigrating } from './helper.js'

const BEFORE = '2026_11_28_0001_post_schedule'
const MIGRATION = '2026_11_29_0100_alert_review'

t.test(`${MIGRATION}: review alerts from before name their review; the alert goes with the review; down drops the column`, async (t) => {
  const { url, schema } = await freshDatabase(t)
  const db = createDb(url, { schema })
  t.teardown(() => db.destroy())
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableSchema: schema })
  t.error((await whileMigrating(() => migrator.migrateTo(BEFORE))).error)

  const now = writeTimeIso()
  const user = (username: string) => ({
    id: randomUUID(),
    username,
    email: `${username}@example.com`,
    password_hash: 'x',
    is_active: true,
    is_creator: true,
    created_at: now,
    updated_at: now
  })
  // `ann_b` and `ann-b` differ where LIKE's `_` would match either: the match must be exact
  const [creator, ann, annDash] = [user('creator'), user('ann_b'), user('ann-b')]
  await db.insertInto('user').values([creator, ann, annDash]).execute()
  const postId = randomUUID()
  await db.insertInto('post').values({
    id: postId,
    creator_id: creator.id,
    type: 'ARTICLE',
    slug: 'p',
    title: 'P',
    body: '',
    tags: '[]',
    media_url: null,
    published_at: now,
    created_at: now,
    updated_at: now,
    sort_at: now
  }).execute()
  const reviewOf = { [ann.id]: randomUUID(), [annDash.id]: randomUUID() }
  for (const author of [ann, annDash]) {
    const review = { id: reviewOf[author.id], post_id: postId, author_id: author.id, rating: 4, text: null, created_at: now }
    await db.insertInto('review').values(review).execute()
  }
  const alert = (kind: string, message: string) =>
    ({ id: randomUUID(), user_id: creator.id, kind, message, post_id: postId, created_at: now, sent_at: null })
  const alerts = [
    alert('review', 'ann_b left a review on your post "P"'),
    alert('review', 'ann-b left a review on your post "P"'),
    alert('comment', 'ann_b left a comment on your post "P"')
  ]
  await db.insertInto('alert').values(alerts).execute()

  t.error((await whileMigrating(() => migrator.migrateTo(MIGRATION))).error)
  const reviewIds = async () =>
    Object.fromEntries((await db.selectFrom('alert').select(['id', 'review_id']).execute()).map(a => [a.id, a.review_id]))
  t.same(await reviewIds(), { [alerts[0].id]: reviewOf[ann.id], [alerts[1].id]: reviewOf[annDash.id], [alerts[2].id]: null },
    'each review alert names its own review')

  await db.deleteFrom('review').where('id', '=', reviewOf[ann.id]).execute()
  t.same(Object.keys(await reviewIds()).sort(), [alerts[1].id, alerts[2].id].sort(), 'the alert goes with its review')

  t.error((await whileMigrating(() => migrator.migrateDown())).error)
  const tables = await db.introspection.getTables()
  const alertTable = tables.find(table => table.name === 'alert' && (table.schema === schema || schema === undefined))
  const columns = alertTable!.columns.map(c => c.name)
  t.notOk(columns.includes('review_id'), 'down drops the column')
  t.equal((await db.selectFrom('alert').select('id').execute()).length, 2, 'and keeps the alerts')
})
