import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { hashPassword } from '../src/domain/passwords.js'
import { writeTimeIso } from '../src/db/time.js'

export const PASSWORD = 'correct horse battery staple'
let cachedHash: Promise<string> | undefined

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
export async function createUser (app: FastifyInstance, opts: { username?: string, creator?: boolean, active?: boolean, firstName?: string, lastName?: string } = {}): Promise<TestUser> {
  const id = randomUUID()
  const username = opts.username ?? `user-${id.slice(0, 8)}`
  const email = `${username}@example.com`
  const now = writeTimeIso()
  cachedHash ??= hashPassword(PASSWORD)
  await app.db.insertInto('user').values({
    id, username, email, password_hash: await cachedHash,
    is_active: opts.active ?? true, is_creator: opts.creator ?? false, created_at: now, updated_at: now
  }).execute()
  await app.db.insertInto('profile').values({
    id, first_name: opts.firstName ?? 'Test', last_name: opts.lastName ?? 'User', age: null, favorite_band: null,
    website: null, avatar_url: null, created_at: now, updated_at: now
  }).execute()
  const token = app.jwt.sign({ id })
  return { id, username, email, token, headers: { authorization: `Bearer ${token}` } }
}

export const createCreator = (app: FastifyInstance, opts: Parameters<typeof createUser>[1] = {}) =>
  createUser(app, { ...opts, creator: true })
