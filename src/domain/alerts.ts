import { randomUUID } from 'node:crypto'
import { cachedRowStatement, cachedStatementPerShape } from '../db/statement-cache.js'
import type { QueryCreator, Selectable } from 'kysely'
import { sql } from '../db/kysely.js'
import type { Alert, AlertKind, AlertListQuery } from '../../schemas/alerts.js'
import type { Db } from '../db/dialect.js'
import type { Values } from '../db/statement-cache.js'
import type { AlertTable, Database } from '../db/schema.js'
import { formatDateTime, formatNullableDateTime } from '../db/date-time-format.js'
import { clockIso, writeTimeIso } from '../db/clock.js'
import { compiledList, type Page } from '../db/paging.js'
import { parseSort } from './list.js'
import type { Executor } from '../db/dialect.js'
import { enqueueEmail } from './outbox.js'
import { orNotFound } from './errors.js'
import { requireVerifiedAddress } from './email-verification.js'
import { selectVisiblePost } from './posts.js'

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

// A fixed subject: no user-written text reaches a mail header (the title is in the body).
function alertSubject (kind: string): string {
  return `New ${kind} on your post`
}

/** What a write under a post needs to alert its creator (alertingWrite, alertPostCreator). */
export interface AlertingValues extends Values {
  postId: string
  actorId: string
  /** the clock as the write reads it: the post must be visible then */
  now: string
  kind: AlertKind
  alertId: string
  alertAt: string
  subject: string
  mailId: string
  mailAt: string
  /** the review a review's alert tells of */
  reviewId?: string
}

/** The values of alertingWrite and alertPostCreator: ids and write times taken now. */
export function alertingValues (postId: string, actorId: string, kind: AlertKind, reviewId?: string): AlertingValues {
  const alertAt = writeTimeIso()
  return {
    postId,
    actorId,
    now: clockIso(),
    kind,
    alertId: randomUUID(),
    alertAt,
    subject: alertSubject(kind),
    mailId: randomUUID(),
    mailAt: writeTimeIso(),
    reviewId
  }
}

/**
 * A review or comment on someone's post alerts the post's creator and queues an e-mail; while the
 * creator's address is unverified the alert is made but no e-mail is queued. Acting on your own
 * post alerts nobody. The rule is the three queries below: `parent` is the post when the actor may
 * see it, with its creator's address; the alert is inserted from it unless the actor is the
 * creator; the e-mail from the alert while the address is verified. PostgreSQL runs them as CTEs
 * of the write's one statement (alertingWrite); SQLite, which has no data-modifying WITH, in turn
 * in the write's transaction (alertPostCreator).
 */
const withParent = <DB extends Database>(db: QueryCreator<DB>, v: ParentValues) =>
  db.with('parent', q => selectVisiblePost(q as unknown as QueryCreator<Database>, v.postId, v.actorId, v.now)
    .innerJoin('user', 'user.id', 'post.creator_id')
    .select(['post.id', 'post.title', 'post.creator_id', 'user.email', 'user.email_verified_at']))

type ParentValues = Pick<AlertingValues, 'postId' | 'actorId' | 'now'>
type AlertValues = ParentValues & Pick<AlertingValues, 'kind' | 'alertId' | 'alertAt' | 'reviewId'>
type MailValues = ParentValues & Pick<AlertingValues, 'subject' | 'mailId' | 'mailAt'>
type WithParent = ReturnType<typeof withParent<Database>>
type ParentScope = WithParent extends QueryCreator<infer DB> ? DB : never

/** The creator's alert, from `parent`, unless the actor is the creator. */
function insertAlert (q: QueryCreator<ParentScope>, v: AlertValues) {
  return q.insertInto('alert')
    .columns(['id', 'user_id', 'kind', 'message', 'post_id', 'created_at', 'sent_at', ...(v.reviewId === undefined ? [] : ['review_id' as const])])
    .expression(eb => eb.selectFrom('parent')
      .innerJoin('user as actor', j => j.on('actor.id', '=', v.actorId))
      .select(eb => [
        eb.val(v.alertId).as('id'),
        'parent.creator_id',
        eb.val(v.kind).as('kind'),
        sql<string>`${eb.ref('actor.username')} || ${' left a '} || ${v.kind} || ${' on your post "'} || ${eb.ref('parent.title')} || ${'"'}`.as('message'),
        'parent.id as post_id',
        eb.val(v.alertAt).as('created_at'),
        sql<null>`null`.as('sent_at'),
        ...(v.reviewId === undefined ? [] : [eb.val(v.reviewId).as('review_id')])
      ])
      .where('parent.creator_id', '<>', v.actorId))
}

/** The alert's e-mail, from `new_alert` and `parent`, while the creator's address is verified. */
function insertMail (q: QueryCreator<ParentScope & { new_alert: { id: string, message: string } }>, v: MailValues) {
  return q.insertInto('outbox_message')
    .columns(['id', 'to_address', 'subject', 'body', 'alert_id', 'next_attempt_at', 'created_at'])
    .expression(eb => eb.selectFrom('new_alert')
      .innerJoin('parent', j => j.onTrue())
      .select(eb => [
        eb.val(v.mailId).as('id'),
        'parent.email',
        eb.val(v.subject).as('subject'),
        'new_alert.message',
        'new_alert.id',
        eb.val(v.mailAt).as('next_attempt_at'),
        eb.val(v.mailAt).as('created_at')
      ])
      .where('parent.email_verified_at', 'is not', null))
}

/**
 * The rule as CTEs of one statement (PostgreSQL), for a write under a post to add its own insert
 * to: it selects from `parent`, which is empty when the actor may not see the post, so nothing is
 * written.
 */
export function alertingWrite (db: Db, v: AlertingValues) {
  return withParent(db, v)
    .with('new_alert', q => insertAlert(q, v).returning(['alert.id', 'alert.message']))
    .with('new_mail', q => insertMail(q, v))
}

/** The rule as statements in turn (SQLite), in the transaction of the write it alerts of. */
export async function alertPostCreator (trx: Executor, v: AlertingValues): Promise<void> {
  const { postId, actorId, now, kind, alertId, alertAt, reviewId, subject, mailId, mailAt } = v
  await insertAlertStatement(trx, undefined, { postId, actorId, now, kind, alertId, alertAt, reviewId })
  await insertMailStatement(trx, undefined, { postId, actorId, now, alertId, subject, mailId, mailAt })
}

// Each statement compiled once (as the PostgreSQL statements that hold the rule are): each takes only the values it uses.
const insertAlertStatement = cachedStatementPerShape((db, _: undefined, v: AlertValues) => insertAlert(withParent(db, v), v))
const insertMailStatement = cachedStatementPerShape((db, _: undefined, v: MailValues & { alertId: string }) =>
  insertMail(withParent(db, v).with('new_alert', q => q.selectFrom('alert').select(['alert.id', 'alert.message']).where('alert.id', '=', v.alertId)), v))

const ALERT_SORT = { created_at: 'created_at' }

const alertList = compiledList((db, v: { userId: string, kind?: string }) => {
  const q = db.selectFrom('alert').selectAll().where('user_id', '=', v.userId)
  return v.kind === undefined ? q : q.where('kind', '=', v.kind)
})

/** The caller's own alerts, newest first by default. */
export async function listAlerts (db: Db, userId: string, query: AlertListQuery, page: Page) {
  const sort = parseSort(query.sort, ALERT_SORT, [{ column: 'created_at', direction: 'desc' }])
  const { rows, total } = await alertList.page(db, { userId, kind: query.kind }, sort, page)
  return { items: rows.map(toAlert), total }
}

const alertById = cachedRowStatement((db, alertId: string) => db.selectFrom('alert').selectAll().where('id', '=', alertId))

/**
 * One alert and whose it is; the route checks ownership with its declared owner rule,
 * so another user's alert is 403 UserNotOwner and a missing one 404 AlertNotFound.
 */
export async function getAlert (db: Db, alertId: string): Promise<{ ownerId: string, alert: Alert }> {
  const row = await orNotFound(alertById(db, alertId),
    'AlertNotFound', `no alert with id ${alertId}`)
  return { ownerId: row.user_id, alert: toAlert(row) }
}

/**
 * Queues the alert's e-mail again, to its user's current address (403 EmailNotVerified while it
 * is unverified). `sent_at` keeps the last delivery until the new one lands.
 */
export async function resendAlert (db: Db, alertId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const row = await orNotFound(trx.selectFrom('alert')
      .select(['alert.id', 'alert.user_id', 'alert.kind', 'alert.message'])
      .where('alert.id', '=', alertId)
      .executeTakeFirst(), 'AlertNotFound', `no alert with id ${alertId}`)
    const to = await requireVerifiedAddress(trx, row.user_id)
    await enqueueEmail(trx, { to, subject: alertSubject(row.kind), body: row.message, alertId: row.id })
  })
}
