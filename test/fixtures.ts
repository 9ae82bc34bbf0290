import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { hashPassword } from '../src/domain/passwords.js'
import { queueVerificationEmail, VERIFICATION_SUBJECT } from '../src/domain/email-verification.js'
import { writeTimeIso } from '../src/db/clock.js'

export const PASSWORD = 'correct horse battery staple'
const cachedHashes = new Map<number, Promise<string>>()

export interface TestUser {
  id: string
  username: string
  email: string
  token: string
  /** `{ authorization: 'Bearer …' }` for app.inject */
  headers: { authorization: string }
}

/**
 * Puts a user (and profile) straight into the database and signs a token for it, so that
 * resource tests need not go through sign-up. Password is PASSWORD.
 */
export async function createUser (
  app: FastifyInstance,
  opts: { username?: string; creator?: boolean; active?: boolean; firstName?: string; lastName?: string; verified?: boolean } = {}
): Promise<TestUser> {
  const id = randomUUID()
  const username = opts.username ?? `user-${id.slice(0, 8)}`
  const email = `${username}@example.com`
  const now = writeTimeIso()
  const cost = app.config.PASSWORD_HASH_COST
  const hash = cachedHashes.get(cost) ?? hashPassword(PASSWORD, cost)
  cachedHashes.set(cost, hash)
  await app.db
    .insertInto('user')
    .values({
      id,
      username,
      email,
      password_hash: await hash,
      is_active: opts.active ?? true,
      is_creator: opts.creator ?? false,
      created_at: now,
      updated_at: now
    })
    .execute()
  await app.db
    .insertInto('profile')
    .values({
      id,
      first_name: opts.firstName ?? 'Test',
      last_name: opts.lastName ?? 'User',
      age: null,
      favorite_band: null,
      website: null,
      avatar_url: null,
      created_at: now,
      updated_at: now
    })
    .execute()
  const token = app.issueToken({ id, generation: 0 }).access_token
  const user = { id, username, email, token, headers: { authorization: `Bearer ${token}` } }
  if (opts.verified) await verifyEmail(app, user)
  return user
}

/** The token of the newest verification link queued to `email`, read from the message itself; undefined when none is. */
export async function verificationToken (app: FastifyInstance, email: string): Promise<string | undefined> {
  const message = await app.db
    .selectFrom('outbox_message')
    .select('body')
    .where('to_address', '=', email)
    .where('subject', '=', VERIFICATION_SUBJECT)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst()
  const link = message && /https?:\/\/\S+/.exec(message.body)?.[0]
  return link ? (new URL(link).searchParams.get('token') ?? undefined) : undefined
}

/**
 * Verifies the user's address the way its owner would: the token of the link mailed to it, through
 * POST /v1/email-verifications. A user put straight into the database (createUser) has had no
 * link yet: one is queued first, as sign-up would (not through the resend route, which would spend
 * the user's mail budget). Adds one outbox message for such a user.
 */
export async function verifyEmail (app: FastifyInstance, user: { id: string; username: string; email: string }): Promise<void> {
  let token = await verificationToken(app, user.email)
  if (token === undefined) {
    await queueVerificationEmail(app.db, app.emailVerification, user)
    token = await verificationToken(app, user.email)
  }
  const res = await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token } })
  if (res.statusCode !== 204) throw new Error(`verifying ${user.email} failed: ${res.statusCode} ${res.body}`)
}

export const createCreator = (app: FastifyInstance, opts: Parameters<typeof createUser>[1] = {}) => createUser(app, { ...opts, creator: true })
