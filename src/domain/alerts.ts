import { randomUUID } from 'node:crypto'
import type { Selectable } from 'kysely'
import type { Alert, AlertKind, AlertListQuery } from '../../schemas/alerts.js'
import type { Db } from '../db/dialect.js'
import type { AlertTable } from '../db/schema.js'
import { formatDateTime, formatNullableDateTime, writeTimeIso } from '../db/time.js'
import { fetchPage, parseSort, type Page } from './list.js'
import type { Executor } from '../db/dialect.js'
import { enqueueEmail } from './outbox.js'
import { orNotFound } from './errors.js'

export type { AlertKind }

/** Alerts: what happened on your posts, each with an e-mail to you; only you see yours. */

type AlertRow = Selectable<AlertTable>

function toAlert (row: AlertRow): Alert {
  return {
    id: row.id,
    kind: row.kind as AlertKind,
    message: row.message,
    post_id: row.post_id,
    created_at: formatDateTime(row.created_at),
    sent_at: formatNullableDateTime(row.sent_at)
  }
}

function alertSubject (kind: string, postTitle: string | undefined): string {
  return postTitle === undefined ? `New ${kind} on your post` : `New ${kind} on "${postTitle}"`
}

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
    id, user_id: post.creator_id, kind: input.kind, message, post_id: post.id, created_at: writeTimeIso(), sent_at: null
  }).execute()
  await enqueueEmail(db, { to: post.email, subject: alertSubject(input.kind, post.title), body: message, alertId: id })
  return id
}

const ALERT_SORT = { created_at: 'created_at' }

/** The caller's own alerts, newest first by default. */
export async function listAlerts (db: Db, userId: string, query: AlertListQuery, page: Page) {
  let q = db.selectFrom('alert').selectAll().where('user_id', '=', userId)
  if (query.kind) q = q.where('kind', '=', query.kind)
  const sort = parseSort(query.sort, ALERT_SORT, [{ column: 'created_at', direction: 'desc' }])
  const { rows, total } = await fetchPage(q, sort, page)
  return { items: rows.map(toAlert), total }
}

/**
 * One alert and whose it is; the route checks ownership with the shared assertOwner,
 * so another user's alert is 403 UserNotOwner and a missing one 404 AlertNotFound.
 */
export async function getAlert (db: Db, alertId: string): Promise<{ ownerId: string, alert: Alert }> {
  const row = await orNotFound(db.selectFrom('alert').selectAll().where('id', '=', alertId).executeTakeFirst(),
    'AlertNotFound', `no alert with id ${alertId}`)
  return { ownerId: row.user_id, alert: toAlert(row) }
}

/**
 * Queues the alert's e-mail again, to its user's current address. `sent_at` keeps the last
 * delivery until the new one lands.
 */
export async function resendAlert (db: Db, alertId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const row = await orNotFound(trx.selectFrom('alert')
      .innerJoin('user', 'user.id', 'alert.user_id')
      .leftJoin('post', 'post.id', 'alert.post_id')
      .select(['alert.id', 'alert.kind', 'alert.message', 'user.email', 'post.title'])
      .where('alert.id', '=', alertId)
      .executeTakeFirst(), 'AlertNotFound', `no alert with id ${alertId}`)
    await enqueueEmail(trx, { to: row.email, subject: alertSubject(row.kind, row.title ?? undefined), body: row.message, alertId: row.id })
  })
}
