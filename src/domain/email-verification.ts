import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import type { Db, Executor } from '../db/dialect.js'
import { writeTimeIso } from '../db/clock.js'
import { AppError } from '../../schemas/problems.js'
import { enqueueEmail } from './outbox.js'

/**
 * E-mail address verification: sign-up (and the resend route) mail a signed link; confirming it
 * sets user.email_verified_at. Until then nothing but this link is mailed to the address.
 */

export interface VerificationSettings {
  /** HMAC key, derived from JWT_SECRET for this one purpose (verificationKey) */
  key: Buffer
  /** how long a link works, seconds (EMAIL_VERIFY_TTL) */
  ttlSeconds: number
  /** the front-end page the link opens, given the token as `?token=` (EMAIL_VERIFY_URL) */
  url: string
}

const PURPOSE = 'roja email verification v1'
export const VERIFICATION_SUBJECT = 'Confirm your e-mail address for Roja'

/** A key of its own (HKDF), so no access-token signature can pass for a verification one or back. */
export function verificationKey (secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, '', PURPOSE, 32))
}

// The address is in the MAC, not in the token: the link carries no address, and a change of address voids it.
function mac (key: Buffer, userId: string, email: string, exp: number): Buffer {
  return createHmac('sha256', key).update(`${PURPOSE}\n${userId}\n${email.toLowerCase()}\n${exp}`).digest()
}

/** `<base64url {"sub","exp"}>.<base64url HMAC>`; exp in seconds since the epoch. */
export function signVerificationToken (settings: VerificationSettings, user: { id: string, email: string }, nowMs = Date.now()): string {
  const exp = Math.floor(nowMs / 1000) + settings.ttlSeconds
  const payload = Buffer.from(JSON.stringify({ sub: user.id, exp })).toString('base64url')
  return `${payload}.${mac(settings.key, user.id, user.email, exp).toString('base64url')}`
}

const invalid = (rule: 'invalid' | 'expired', message: string) => new AppError('InvalidVerificationToken', message, {
  errors: [{ in: 'body', field: '/token', rule, message }]
})
const NOT_VALID = 'this verification link is not valid (it may be for an earlier e-mail address): sign in and ask for a new one'

function readPayload (token: string): { sub: string, exp: number, signature: Buffer } {
  const [payload, signature, extra] = token.split('.')
  let claims: unknown
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  } catch {
    throw invalid('invalid', NOT_VALID)
  }
  const { sub, exp } = (claims ?? {}) as { sub?: unknown, exp?: unknown }
  // Only the canonical encoding: Buffer.from skips stray characters, so two spellings could read as one MAC.
  const bytes = Buffer.from(signature ?? '', 'base64url')
  if (extra !== undefined || bytes.length !== 32 || bytes.toString('base64url') !== signature || typeof sub !== 'string' || !Number.isSafeInteger(exp)) {
    throw invalid('invalid', NOT_VALID)
  }
  return { sub, exp: exp as number, signature: bytes }
}

/**
 * POST /email-verifications: the token must be ours, unexpired, and signed for the account's
 * current address; then the address is verified. Confirming again changes nothing (idempotent).
 * The token never appears in an error's text, since problem details are logged.
 */
export async function confirmEmail (db: Db, settings: VerificationSettings, token: string, nowMs = Date.now()): Promise<void> {
  const { sub, exp, signature } = readPayload(token)
  await db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('user').select(['id', 'email', 'email_verified_at']).where('id', '=', sub).executeTakeFirst()
    const expected = user && mac(settings.key, user.id, user.email, exp)
    if (!expected || !timingSafeEqual(expected, signature)) throw invalid('invalid', NOT_VALID)
    // Checked after the signature, so only a genuine link is told it expired.
    if (nowMs >= exp * 1000) throw invalid('expired', 'this verification link has expired: sign in and ask for a new one')
    if (user.email_verified_at !== null) return
    await trx.updateTable('user').set({ email_verified_at: writeTimeIso() })
      .where('id', '=', user.id).where('email', '=', user.email).where('email_verified_at', 'is', null).execute()
  })
}

function ttlInWords (seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? '1 hour' : `${seconds / 3600} hours`
  const minutes = Math.max(1, Math.round(seconds / 60))
  return minutes === 1 ? '1 minute' : `${minutes} minutes`
}

/** Queues the link to the user's address, in the caller's transaction (sign-up's, or the resend's). */
export async function queueVerificationEmail (db: Executor, settings: VerificationSettings, user: { id: string, username: string, email: string }): Promise<void> {
  const link = new URL(settings.url)
  link.searchParams.set('token', signVerificationToken(settings, user))
  const body = [
    `Hello ${user.username},`,
    '',
    'please confirm that this is your e-mail address by opening this link:',
    '',
    `  ${link.href}`,
    '',
    `The link works for ${ttlInWords(settings.ttlSeconds)}. Until you confirm, Roja sends nothing else to this address.`,
    'If you did not sign up to Roja, ignore this message.',
    ''
  ].join('\n')
  await enqueueEmail(db, { to: user.email, subject: VERIFICATION_SUBJECT, body })
}

/** POST /users/{userId}/verification-emails: a fresh link, unless the address is already verified (409). */
export async function resendVerification (db: Db, settings: VerificationSettings, userId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('user').select(['id', 'username', 'email', 'email_verified_at']).where('id', '=', userId).executeTakeFirstOrThrow()
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
  if (address === undefined) throw new AppError('EmailNotVerified', 'verify your e-mail address first: open the link Roja mailed you, or ask for a new one')
  return address
}
