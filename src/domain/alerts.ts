import { randomUUID } from 'node:crypto'
import { nowIso } from '../db/time.js'
import { enqueueEmail, type Executor } from './outbox.js'

export type AlertKind = 'review' | 'comment'

/**
 * A review or comment on someone's post alerts the post's creator and queues an e-mail,
 * in the caller's transaction. Acting on your own post alerts nobody.
 */
export async function alertPostCreator (db: Executor, input: { postId: string, actorId: string, kind: AlertKind }): Promise<string | undefined> {
  const post = await db.selectFrom('post')
    .innerJoin('user', 'user.id', 'post.creator_id')
    .select(['post.id', 'post.title', 'post.creator_id', 'user.email'])
    .where('post.id', '=', input.postId)
    .executeTakeFirst()
  if (!post || post.creator_id === input.actorId) return undefined
  const actor = await db.selectFrom('user').select('username').where('id', '=', input.actorId).executeTakeFirstOrThrow()
  const id = randomUUID()
  const message = `${actor.username} left a ${input.kind} on your post "${post.title}"`
  await db.insertInto('alert').values({
    id, user_id: post.creator_id, kind: input.kind, message, post_id: post.id, created_at: nowIso(), sent_at: null
  }).execute()
  await enqueueEmail(db, { to: post.email, subject: `New ${input.kind} on "${post.title}"`, body: message, alertId: id })
  return id
}
