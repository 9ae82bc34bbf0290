import { randomUUID } from 'node:crypto'
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../db/schema.js'
import { nowIso } from '../db/time.js'

export type Executor = Kysely<Database> | Transaction<Database>

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
  const now = nowIso()
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
