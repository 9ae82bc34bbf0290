import type { Db } from '../db/dialect.js'
import { enqueueEmail } from './outbox.js'
import { requireVerifiedAddress } from './email-verification.js'

/**
 * POST /users/{userId}/email: queues a summary of the account (what the user has made and
 * received) to the user's own address; the outbox worker sends it after the answer. An
 * unverified address is 403 EmailNotVerified, and nothing is queued.
 */
export async function queueAccountSummary (db: Db, userId: string): Promise<void> {
  const to = await requireVerifiedAddress(db, userId)
  const user = await db.selectFrom('user').select(['username', 'is_creator', 'created_at']).where('id', '=', userId).executeTakeFirstOrThrow()
  const count = (table: 'post' | 'review' | 'comment' | 'alert', column: 'creator_id' | 'author_id' | 'user_id') =>
    db.selectFrom(table).select(eb => eb.fn.countAll<number | string>().as('n')).where(column, '=', userId)
      .executeTakeFirstOrThrow().then(r => Number(r.n))
  const [posts, reviews, comments, alerts] = await Promise.all([
    count('post', 'creator_id'), count('review', 'author_id'), count('comment', 'author_id'), count('alert', 'user_id')
  ])
  const body = [
    `Hello ${user.username},`,
    '',
    'here is a summary of your Roja account:',
    '',
    `  account type: ${user.is_creator ? 'creator' : 'member'}`,
    `  posts:        ${posts}`,
    `  reviews:      ${reviews}`,
    `  comments:     ${comments}`,
    `  alerts:       ${alerts}`,
    ''
  ].join('\n')
  await enqueueEmail(db, { to, subject: 'Your Roja account summary', body })
}
