import { randomUUID } from 'node:crypto'
import type { Selectable } from 'kysely'
import type { Db, Executor } from '../db/dialect.js'
import { claimUnlocked } from '../db/row-lock.js'
import type { OutboxMessageTable } from '../db/schema.js'
import { toDate } from '../db/date-time-format.js'
import { writeTimeIso, clockMs } from '../db/clock.js'

export type OutboxMessage = Selectable<OutboxMessageTable>

export interface Email {
  to: string
  subject: string
  body: string
  alertId?: string
}

/**
 * Queues an e-mail. Call it with the transaction of the change that causes it, so the
 * message exists exactly when the change does; the outbox worker delivers it later.
 */
export async function enqueueEmail (db: Executor, email: Email): Promise<string> {
  const id = randomUUID()
  const now = writeTimeIso()
  await db.insertInto('outbox_message').values({
    id,
    to_address: email.to,
    subject: email.subject,
    body: email.body,
    alert_id: email.alertId ?? null,
    last_error: null,
    next_attempt_at: now,
    locked_until_at: null,
    sent_at: null,
    created_at: now
  }).execute()
  return id
}

export interface ClaimOptions {
  now: Date
  /** how long the claim holds; after it a message whose sender died is due again */
  leaseMs: number
  limit: number
  /** a message that has begun this many attempts is failed for good (kept, never retried) */
  maxAttempts: number
}

/**
 * Claims up to `limit` due messages for this worker: unsent, under the attempt limit, due,
 * and not leased by another worker (or leased by one that died: its lease has run out).
 * The claim is a lease (`locked_until_at`) plus one counted attempt, written in the same
 * transaction as the select; on PostgreSQL `FOR UPDATE SKIP LOCKED` lets concurrent
 * workers pass over each other's rows, so no message is claimed twice.
 */
export async function claimDue (db: Db, opts: ClaimOptions): Promise<OutboxMessage[]> {
  const now = opts.now.toISOString()
  const leaseUntil = new Date(opts.now.getTime() + opts.leaseMs).toISOString()
  return await db.transaction().execute(async (trx) => {
    const due = claimUnlocked(trx, trx.selectFrom('outbox_message')
      .select('id')
      .where('sent_at', 'is', null)
      .where('attempts', '<', opts.maxAttempts)
      .where('next_attempt_at', '<=', now)
      .where(eb => eb.or([eb('locked_until_at', 'is', null), eb('locked_until_at', '<=', now)]))
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(opts.limit))
    const ids = (await due.execute()).map(r => r.id)
    if (ids.length === 0) return []
    return await trx.updateTable('outbox_message')
      .set(eb => ({ locked_until_at: leaseUntil, attempts: eb('attempts', '+', 1) }))
      .where('id', 'in', ids)
      .returningAll()
      .execute()
  })
}

/** Records a delivery, and the alert's `sent_at` when the message carried one. */
export async function markSent (db: Db, message: Pick<OutboxMessage, 'id' | 'alert_id'>, now = new Date(clockMs())): Promise<void> {
  const sentAt = now.toISOString()
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('outbox_message')
      .set({ sent_at: sentAt, locked_until_at: null, last_error: null })
      .where('id', '=', message.id)
      .execute()
    if (message.alert_id) {
      await trx.updateTable('alert').set({ sent_at: sentAt }).where('id', '=', message.alert_id).execute()
    }
  })
}

/**
 * Records a failed attempt: the error, and when to try again (the lease is released).
 * With no `nextAttemptAt` the message has used its attempts and stays failed.
 */
export async function markFailed (db: Db, id: string, error: string, nextAttemptAt: Date | undefined): Promise<void> {
  await db.updateTable('outbox_message')
    .set({
      last_error: error.slice(0, 2000),
      locked_until_at: null,
      ...(nextAttemptAt ? { next_attempt_at: nextAttemptAt.toISOString() } : {})
    })
    .where('id', '=', id)
    .execute()
}

export interface OutboxBacklog {
  /** unsent messages that will still be tried */
  pending: number
  /** when the oldest of them was queued (undefined when none is) */
  oldestQueuedAt?: Date
  /** unsent messages that used all their attempts and stay failed */
  dead: number
}

/** The undelivered messages, in one query over the unsent rows only (the due index leads with sent_at). */
export async function outboxBacklog (db: Db, maxAttempts: number): Promise<OutboxBacklog> {
  const row = await db.selectFrom('outbox_message')
    .where('sent_at', 'is', null)
    .select(eb => [
      eb.fn.countAll<number | string>().as('unsent'),
      eb.fn.sum<number | string | null>(eb.case().when('attempts', '>=', maxAttempts).then(1).else(0).end()).as('dead'),
      eb.fn.min(eb.case().when('attempts', '<', maxAttempts).then(eb.ref('created_at')).end()).as('oldest')
    ])
    .executeTakeFirstOrThrow()
  const dead = Number(row.dead ?? 0)
  return { pending: Number(row.unsent) - dead, dead, oldestQueuedAt: row.oldest ? toDate(row.oldest) : undefined }
}

/** Exponential backoff: base, 2·base, 4·base … after the 1st, 2nd, 3rd … attempt, capped at `maxMs`. */
export function backoffMs (attempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempts - 1))
}
