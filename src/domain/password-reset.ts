import { createHmac, hkdfSync, randomBytes } from 'node:crypto'
import { AppError } from '../../schemas/problems.js'
import type { Db, Executor } from '../db/dialect.js'
import { writeTimeIso } from '../db/clock.js'
import { enqueueEmail } from './outbox.js'
import { dummyHash, hashPassword, verifyPassword } from './passwords.js'
import { normaliseUsername } from './users.js'

/**
 * Forgotten passwords: a request names the account by address or username and always gets the
 * same answer; an active account with a verified address is mailed a link with a random token,
 * which sets a new password once, within the hour, and ends every token of the account.
 */

export interface ResetSettings {
  /** HMAC key for the stored token hashes, derived from JWT_SECRET for this one purpose (resetKey) */
  key: Buffer
  /** how long a link works, seconds */
  ttlSeconds: number
  /** the page the link opens, given the token as `?token=` (PASSWORD_RESET_URL) */
  url: string
}

/** A reset link works for an hour. */
export const RESET_TTL_SECONDS = 3600
const PURPOSE = 'roja password reset v1'
export const RESET_SUBJECT = 'Reset your Roja password'

/** A key of its own (HKDF), apart from the verification key and the JWT key. */
export function resetKey (secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, '', PURPOSE, 32))
}

// 16 random bytes (128 bits, single use, one hour): the mailed link stays on one line of 7-bit text.
const TOKEN_BYTES = 16
const TOKEN = /^[A-Za-z0-9_-]{22}$/

function tokenHash (key: Buffer, token: string): string {
  return createHmac('sha256', key).update(token).digest('base64url')
}

export type ResetRequest = { email: string } | { username: string }

/**
 * POST /password-resets: queues a link to the account's address when there is an active account
 * with a verified address, else nothing. Either way the caller learns nothing and waits about
 * as long: each request pays one scrypt (on the thread pool), and the few writes of a queued
 * link run beside it, so the answer waits for the hash either way. The account's earlier links
 * die as the new one is made.
 */
export async function requestPasswordReset (db: Db, settings: ResetSettings, who: ResetRequest, hashCost: number): Promise<void> {
  const [column, value] = 'email' in who
    ? ['email', who.email.trim().toLowerCase()] as const
    : ['username', normaliseUsername(who.username)] as const
  const user = await db.selectFrom('user').select(['id', 'username', 'email', 'email_verified_at', 'is_active'])
    .where(column, '=', value).executeTakeFirst()
  const work = verifyPassword('password reset', dummyHash(hashCost))
  if (user && user.is_active && user.email_verified_at !== null) {
    await db.transaction().execute(async (trx) => {
      await trx.deleteFrom('password_reset').where('user_id', '=', user.id).execute()
      await queueResetEmail(trx, settings, user)
    })
  }
  await work
}

async function queueResetEmail (db: Executor, settings: ResetSettings, user: { id: string, username: string, email: string }) {
  const token = randomBytes(TOKEN_BYTES).toString('base64url')
  const now = Date.now()
  await db.insertInto('password_reset').values({
    token_hash: tokenHash(settings.key, token),
    user_id: user.id,
    expires_at: new Date(now + settings.ttlSeconds * 1000).toISOString(),
    created_at: new Date(now).toISOString()
  }).execute()
  const link = new URL(settings.url)
  link.searchParams.set('token', token)
  // Lines within 76 characters, as the verification mail's, so the link is copied as written.
  const body = [
    `Hello ${user.username},`,
    '',
    'someone (we hope you) asked to reset the password of your Roja account.',
    'To choose a new password, open this link:',
    '',
    `  ${link.href}`,
    '',
    'The link works once, for 1 hour; a newer link or a password change ends it.',
    'Setting a new password signs you out everywhere.',
    'If you did not ask for this, ignore this message: nothing changes.',
    ''
  ].join('\n')
  await enqueueEmail(db, { to: user.email, subject: RESET_SUBJECT, body })
}

const invalid = (rule: 'invalid' | 'expired', message: string) => new AppError('InvalidResetToken', message, {
  errors: [{ in: 'body', field: '/token', rule, message }]
})

/**
 * POST /password-resets/confirmations: the token must be one we issued, unused and unexpired.
 * Using it removes it (single use, even when it has expired); the new password is set, every
 * token of the account ends (the token generation moves on) and the account's other links go,
 * all in one transaction. The token never appears in an error's text.
 */
export async function resetPassword (db: Db, settings: ResetSettings, token: string, newPassword: string, hashCost: number,
  nowMs = Date.now()): Promise<void> {
  if (!TOKEN.test(token)) throw invalid('invalid', 'this password-reset link is not valid: ask for a new one')
  const hash = tokenHash(settings.key, token)
  const passwordHash = await hashPassword(newPassword, hashCost)
  await db.transaction().execute(async (trx) => {
    const link = await trx.deleteFrom('password_reset').where('token_hash', '=', hash)
      .returning(['user_id', 'expires_at']).executeTakeFirst()
    if (!link) throw invalid('invalid', 'this password-reset link is not valid (it may have been used or replaced): ask for a new one')
    if (nowMs >= Date.parse(link.expires_at)) {
      // The expired link is gone all the same: commit its removal, then refuse.
      return 'expired' as const
    }
    await setPassword(trx, link.user_id, passwordHash)
  }).then((outcome) => {
    if (outcome === 'expired') throw invalid('expired', 'this password-reset link has expired: ask for a new one')
  })
}

/**
 * The password rule every change shares: the new hash, every token issued so far ended (the
 * generation moves on) and every reset link gone. Returns the new generation.
 */
export async function setPassword (trx: Executor, userId: string, passwordHash: string): Promise<number> {
  const row = await trx.updateTable('user')
    .set(eb => ({ password_hash: passwordHash, token_generation: eb('token_generation', '+', 1), updated_at: writeTimeIso() }))
    .where('id', '=', userId).returning('token_generation').executeTakeFirstOrThrow()
  await trx.deleteFrom('password_reset').where('user_id', '=', userId).execute()
  return Number(row.token_generation)
}

/** The settings of reset links: a key from JWT_SECRET, an hour, the page of PASSWORD_RESET_URL. */
export function resetSettings (secret: string, url: string): ResetSettings {
  return { key: resetKey(secret), ttlSeconds: RESET_TTL_SECONDS, url }
}
