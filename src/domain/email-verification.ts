import { createHmac, hkdfSync, randomBytes } from 'node:crypto'
import type { Db, Executor } from '../db/dialect.js'
import { writeTimeIso } from '../db/clock.js'
import { uniqueViolation } from '../db/unique-violation.js'
import { AppError } from '../../schemas/problems.js'
import { enqueueEmail } from './outbox.js'

/**
 * E-mail address verification: sign-up (and the resend route) mail a link with a random token;
 * confirming it sets user.email_verified_at. Until then nothing but this link is mailed to the address.
 */

export interface VerificationSettings {
  /** HMAC key for the stored token hashes, derived from JWT_SECRET for this one purpose (verificationKey) */
  key: Buffer
  /** how long a link works, seconds (EMAIL_VERIFY_TTL) */
  ttlSeconds: number
  /** the front-end page the link opens, given the token as `?token=` (EMAIL_VERIFY_URL) */
  url: string
}

const PURPOSE = 'roja email verification v1'
export const VERIFICATION_SUBJECT = 'Confirm your e-mail address for Roja'

/** A key of its own (HKDF), so nothing keyed by JWT_SECRET can pass for a token hash or back. */
export function verificationKey (secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, '', PURPOSE, 32))
}

// 16 random bytes: short enough that the mailed link stays on one line of plain 7-bit text.
const TOKEN_BYTES = 16
const TOKEN = /^[A-Za-z0-9_-]{22}$/

// Keyed, so a copy of the table alone can neither give a working link nor test guesses offline.
function tokenHash (key: Buffer, token: string): string {
  return createHmac('sha256', key).update(token).digest('base64url')
}

/**
 * Issues a link's token for the user's current address: stores only its hash, with the address
 * and the expiry, in the caller's transaction; the user's expired links go at the same time.
 */
export async function issueVerificationToken (
  db: Executor,
  settings: VerificationSettings,
  user: { id: string; email: string },
  nowMs = Date.now(),
  purpose: 'verify' | 'change' = 'verify'
): Promise<string> {
  const token = randomBytes(TOKEN_BYTES).toString('base64url')
  const now = new Date(nowMs).toISOString()
  await db.deleteFrom('email_verification').where('user_id', '=', user.id).where('expires_at', '<=', now).execute()
  await db
    .insertInto('email_verification')
    .values({
      token_hash: tokenHash(settings.key, token),
      user_id: user.id,
      email: user.email,
      purpose,
      expires_at: new Date(nowMs + settings.ttlSeconds * 1000).toISOString(),
      created_at: now
    })
    .execute()
  return token
}

const invalid = (rule: 'invalid' | 'expired', message: string) =>
  new AppError('InvalidVerificationToken', message, {
    errors: [{ in: 'body', field: '/token', rule, message }]
  })
const NOT_VALID = 'this verification link is not valid (it may be for an earlier e-mail address): sign in and ask for a new one'
const TAKEN = 'this address cannot be used for your account: sign in and ask for the change again'

/**
 * POST /email-verifications: the token must be one we issued and unexpired. A link to the account's
 * own address (`verify`) must be for the address it still has; then the address is verified. A link
 * to a new address (`change`, POST /profiles/me/email-changes) makes that address the account's,
 * verified, unless another account took it meanwhile; the account's reset links die with the old
 * address. Confirming again changes nothing (idempotent). The token never appears in an error's
 * text, since problem details are logged.
 */
export async function confirmEmail (db: Db, settings: VerificationSettings, token: string, nowMs = Date.now()): Promise<void> {
  if (!TOKEN.test(token)) throw invalid('invalid', NOT_VALID)
  const hash = tokenHash(settings.key, token)
  await db
    .transaction()
    .execute(async trx => {
      const link = await trx
        .selectFrom('email_verification')
        .innerJoin('user', 'user.id', 'email_verification.user_id')
        .select([
          'user.id',
          'user.email',
          'user.email_verified_at',
          'email_verification.email as sent_to',
          'email_verification.expires_at',
          'email_verification.purpose'
        ])
        .where('email_verification.token_hash', '=', hash)
        .executeTakeFirst()
      const current = link !== undefined && link.sent_to.toLowerCase() === link.email.toLowerCase()
      if (!link || (!current && link.purpose !== 'change')) throw invalid('invalid', NOT_VALID)
      // Checked after the address, so only a link that would still verify is told it expired.
      if (nowMs >= Date.parse(link.expires_at)) throw invalid('expired', 'this verification link has expired: sign in and ask for a new one')
      if (current) {
        if (link.email_verified_at !== null) return
        await trx
          .updateTable('user')
          .set({ email_verified_at: writeTimeIso() })
          .where('id', '=', link.id)
          .where('email', '=', link.email)
          .where('email_verified_at', 'is', null)
          .execute()
        return
      }
      const taken = await trx.selectFrom('user').select('id').where('email', '=', link.sent_to).executeTakeFirst()
      if (taken) throw invalid('invalid', TAKEN)
      const now = writeTimeIso()
      await trx.updateTable('user').set({ email: link.sent_to, email_verified_at: now, updated_at: now }).where('id', '=', link.id).execute()
      await trx.deleteFrom('password_reset').where('user_id', '=', link.id).execute()
    })
    .catch((err: unknown) => {
      // Another account took the address between the check and the write: the unique index decides.
      if (uniqueViolation(err) !== undefined) throw invalid('invalid', TAKEN)
      throw err
    })
}

export function ttlInWords (seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? '1 hour' : `${seconds / 3600} hours`
  const minutes = Math.max(1, Math.round(seconds / 60))
  return minutes === 1 ? '1 minute' : `${minutes} minutes`
}

/** Queues the link to the user's address, in the caller's transaction (sign-up's, or the resend's). */
export async function queueVerificationEmail (
  db: Executor,
  settings: VerificationSettings,
  user: { id: string; username: string; email: string }
): Promise<void> {
  const link = new URL(settings.url)
  link.searchParams.set('token', await issueVerificationToken(db, settings, user))
  // Every line within 76 characters (with the default link too), so the mail goes out as 7-bit
  // text rather than quoted-printable, and the link can be copied from it as it stands.
  const body = [
    `Hello ${user.username},`,
    '',
    'please confirm that this is your e-mail address by opening this link:',
    '',
    `  ${link.href}`,
    '',
    `The link works for ${ttlInWords(settings.ttlSeconds)}.`,
    'Until you confirm, Roja sends nothing else to this address.',
    'If you did not sign up to Roja, ignore this message.',
    ''
  ].join('\n')
  await enqueueEmail(db, { to: user.email, subject: VERIFICATION_SUBJECT, body })
}

/** POST /users/{userId}/verification-emails: a fresh link, unless the address is already verified (409). */
export async function resendVerification (db: Db, settings: VerificationSettings, userId: string): Promise<void> {
  await db.transaction().execute(async trx => {
    const user = await trx
      .selectFrom('user')
      .select(['id', 'username', 'email', 'email_verified_at'])
      .where('id', '=', userId)
      .executeTakeFirstOrThrow()
    if (user.email_verified_at !== null) throw new AppError('EmailAlreadyVerified', 'this e-mail address is already verified')
    await queueVerificationEmail(trx, settings, user)
  })
}

/**
 * The address Roja may mail the user at: theirs once verified, else undefined, so an unverified
 * address gets nothing but the link (alertPostCreator checks the same column on the row it reads).
 */
export async function verifiedAddress (db: Executor, userId: string): Promise<string | undefined> {
  const user = await db.selectFrom('user').select(['email', 'email_verified_at']).where('id', '=', userId).executeTakeFirst()
  return user && user.email_verified_at !== null ? user.email : undefined
}

/** verifiedAddress for routes whose whole point is a mail: unverified is 403 EmailNotVerified. */
export async function requireVerifiedAddress (db: Executor, userId: string): Promise<string> {
  const address = await verifiedAddress(db, userId)
  if (address === undefined) { throw new AppError('EmailNotVerified', 'verify your e-mail address first: open the link Roja mailed you, or ask for a new one') }
  return address
}
