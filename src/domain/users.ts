import { randomUUID } from 'node:crypto'
import type { Selectable, SelectQueryBuilder, Updateable } from 'kysely'
import { AppError } from '../../schemas/problems.js'
import type { MyProfile, Profile, ProfileCreate, ProfileUpdate } from '../../schemas/profiles.js'
import type { Db } from '../db/dialect.js'
import { changeRow, rowVersion, sameVersion } from '../db/row-change.js'
import type { Database, ProfileTable } from '../db/schema.js'
import { formatDateTime } from '../db/date-time-format.js'
import { writeTimeIso } from '../db/clock.js'
import { uniqueViolation } from '../db/unique-violation.js'
import { cachedRowStatement, cachedStatement, cachedStatementPerShape, type Values } from '../db/statement-cache.js'
import { dummyHash, hashPassword, verifyPassword } from './passwords.js'
import { queueVerificationEmail, type VerificationSettings } from './email-verification.js'
import { bodyOf, type Change } from './merge-patch.js'

/** Who is calling: the account behind a verified token. */
export interface Account {
  id: string
  username: string
  email: string
  is_creator: boolean
  is_active: boolean
}

export const invalidToken = () => new AppError('InvalidCredentials', 'the token is invalid or has expired', {
  headers: { 'www-authenticate': 'Bearer error="invalid_token"' }
})

// Read on every authenticated request: compiled once.
const accountById = cachedStatement((db, id: string) => db.selectFrom('user')
  .select(['id', 'username', 'email', 'is_creator', 'is_active', 'token_generation'])
  .where('id', '=', id))

/**
 * The account rule, in one place: the token's user must still exist (401 invalid_token), be
 * active (403 UserIsBanned), and the token be of the account's current generation (401). Read on
 * every authenticated request, so a ban, a revocation or a deletion takes effect at once on every instance.
 */
export async function findAccount (db: Db, id: string, generation: number): Promise<Account> {
  const [row] = await accountById(db, id)
  if (!row) throw invalidToken()
  // A banned caller is told so (403) whatever its token's generation; the ban bumped it, so after an unban it is 401.
  if (!row.is_active) throw new AppError('UserIsBanned', 'this account is banned')
  if (Number(row.token_generation) !== generation) throw invalidToken()
  return { id: row.id, username: row.username, email: row.email, is_creator: Boolean(row.is_creator), is_active: true }
}

/** The username rule: surrounding whitespace stripped, lower case. The one place it is applied. */
export function normaliseUsername (username: string): string {
  return username.trim().toLowerCase()
}

// `me` would be shadowed by /profiles/me.
const RESERVED_USERNAMES = new Set(['me'])

type ProfileRow = Selectable<ProfileTable> & { username: string, is_creator: boolean | number }

function selectProfile (db: Db) {
  return withUser(db.selectFrom('profile'))
}

/** A profile's columns and its user's, from `profile` (the table, or a CTE of its rows named so). */
function withUser<Q extends SelectQueryBuilder<Database & { profile: ProfileTable }, 'profile', {}>> (from: Q) {
  return (from as unknown as SelectQueryBuilder<Database, 'profile', {}>).innerJoin('user', 'user.id', 'profile.id')
    .select(['profile.id', 'user.username', 'profile.first_name', 'profile.last_name', 'profile.age',
      'profile.favorite_band', 'profile.website', 'profile.avatar_url', 'user.is_creator',
      'profile.created_at', 'profile.updated_at'])
}

function toProfile (row: ProfileRow): Profile {
  return {
    id: row.id,
    username: row.username,
    first_name: row.first_name,
    last_name: row.last_name,
    age: row.age,
    favorite_band: row.favorite_band as Profile['favorite_band'],
    website: row.website,
    avatar_url: row.avatar_url,
    is_creator: Boolean(row.is_creator),
    created_at: formatDateTime(row.created_at),
    updated_at: formatDateTime(row.updated_at)
  }
}

/**
 * Sign-up: creates the user and its profile (same id), unverified, and queues the verification
 * link in the same transaction. Taken username or e-mail → 409.
 */
export async function signUp (db: Db, input: ProfileCreate, verification: VerificationSettings, hashCost: number): Promise<MyProfile> {
  const username = normaliseUsername(input.username)
  if (RESERVED_USERNAMES.has(username)) {
    throw new AppError('InvalidUserData', 'bad username, choose another', {
      errors: [{ in: 'body', field: '/username', rule: 'reserved', message: 'bad username, choose another' }]
    })
  }
  const email = input.email.trim().toLowerCase()
  const passwordHash = await hashPassword(input.password, hashCost)
  const id = randomUUID()
  const now = writeTimeIso()
  try {
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('user').values({
        id, username, email, password_hash: passwordHash, is_active: true, is_creator: false, created_at: now, updated_at: now
      }).execute()
      await trx.insertInto('profile').values({
        id,
        first_name: input.first_name,
        last_name: input.last_name ?? null,
        age: input.age ?? null,
        favorite_band: input.favorite_band ?? null,
        website: input.website ?? null,
        avatar_url: null,
        created_at: now,
        updated_at: now
      }).execute()
      await queueVerificationEmail(trx, verification, { id, username, email })
    })
  } catch (err) {
    // The unique constraints decide, so two concurrent sign-ups cannot both win.
    const column = takenColumn(err)
    if (column) throw new AppError('Conflict', `this ${column === 'email' ? 'e-mail address' : 'username'} is already taken`)
    throw err
  }
  return getMyProfile(db, id)
}

/** Which of user.username / user.email a unique-constraint failure is about, if it is one. */
function takenColumn (err: unknown): 'username' | 'email' | undefined {
  const text = uniqueViolation(err)
  if (text === undefined) return undefined
  return text.includes('email') ? 'email' : 'username'
}

/**
 * The user id (and token generation) for a username and password, or 401 InvalidCredentials. An unknown username
 * still pays for one scrypt (against a dummy hash at `hashCost`), so both failures cost the same and look the same.
 * A banned user with the right password is told so (403) rather than handed a useless token.
 */
export async function checkCredentials (db: Db, username: string, password: string, hashCost: number): Promise<{ id: string, generation: number }> {
  const user = await db.selectFrom('user').select(['id', 'password_hash', 'is_active', 'token_generation'])
    .where('username', '=', normaliseUsername(username)).executeTakeFirst()
  const ok = await verifyPassword(password, user?.password_hash ?? dummyHash(hashCost))
  if (!user || !ok) throw new AppError('InvalidCredentials', 'wrong username or password')
  if (!user.is_active) throw new AppError('UserIsBanned', 'this account is banned')
  return { id: user.id, generation: Number(user.token_generation) }
}

const profileById = cachedRowStatement((db, id: string) => selectProfile(db).where('profile.id', '=', id))
const myProfileById = cachedRowStatement((db, id: string) => selectProfile(db).select(['user.email', 'user.email_verified_at']).where('profile.id', '=', id))

export async function getProfile (db: Db, id: string): Promise<Profile> {
  const row = await profileById(db, id)
  if (!row) throw new AppError('ProfileNotFound', `no profile with id ${id}`)
  return toProfile(row)
}

export async function getMyProfile (db: Db, id: string): Promise<MyProfile> {
  const row = await myProfileById(db, id)
  if (!row) throw new AppError('ProfileNotFound', `no profile with id ${id}`)
  return toMyProfile(row)
}

function toMyProfile (row: ProfileRow & { email: string, email_verified_at: string | null }): MyProfile {
  return { ...toProfile(row), email: row.email, email_verified: row.email_verified_at !== null }
}

/** A creator's profile: 404 ProfileNotFound, or 404 ProfileNotCreator when it is no creator's. */
export async function getCreator (db: Db, id: string): Promise<Profile> {
  const profile = await getProfile(db, id)
  if (!profile.is_creator) throw new AppError('ProfileNotCreator', `profile ${id} is not a creator`)
  return profile
}

/**
 * PUT and PATCH /profiles/me: replaces the writable fields; an absent optional field becomes null.
 * The guard (If-Match) judges the profile as it is written (changeRow), so twins with one ETag
 * cannot both pass.
 */
export async function updateMe (db: Db, id: string, change: Change<MyProfile, ProfileUpdate>, guard: (current: MyProfile) => void): Promise<MyProfile> {
  return changeRow(db, {
    lock: db => db.selectFrom('profile').select('id').where('id', '=', id),
    read: async db => {
      const current = await myProfileToChange(db, id)
      if (!current) throw new AppError('ProfileNotFound', `no profile with id ${id}`)
      const me = toMyProfile(current)
      guard(me)
      const input = bodyOf(change, me)
      const columns = {
        first_name: input.first_name,
        last_name: input.last_name ?? null,
        age: input.age ?? null,
        favorite_band: input.favorite_band ?? null,
        website: input.website ?? null,
        avatar_url: input.avatar_url ?? null,
        updated_at: writeTimeIso()
      }
      return { version: current.version, columns }
    },
    statement: async (db, { version, columns }) => {
      const [row] = await updateProfileReturning(db, undefined, { ...columns, id, version: version! })
      return row && toMyProfile(row)
    },
    steps: async (trx, { columns }) => {
      await trx.updateTable('profile').set(columns).where('id', '=', id).execute()
      return getMyProfile(trx as Db, id)
    }
  })
}

/** The profile a change reads: as getMyProfile reads it, with the row's version (changeRow). */
const myProfileToChange = cachedRowStatement((db, id: string) =>
  selectProfile(db).select(['user.email', 'user.email_verified_at', rowVersion(db, 'profile').as('version')]).where('profile.id', '=', id))

/** The update in one statement (changeRow's), where the profile still has the version read, read back as getMyProfile reads it. */
const updateProfileReturning = cachedStatementPerShape((db, _: undefined, v: Updateable<ProfileTable> & { id: string; version: string } & Values) => {
  const { id, version, ...columns } = v
  return withUser(
    db.with('changed', q => q.updateTable('profile').set(columns).where('profile.id', '=', id).where(sameVersion('profile', version)).returningAll())
      .selectFrom('changed as profile')
  ).select(['user.email', 'user.email_verified_at'])
})

/** The PUT body that keeps a profile as it is: what a PATCH merges into. */
export function profileFields (profile: Profile): ProfileUpdate {
  const { first_name, last_name, age, favorite_band, website, avatar_url } = profile
  return { first_name, last_name, age, favorite_band, website, avatar_url }
}

// Operator actions (src/cli.ts). Each answers whether anything changed; an unknown user is ProfileNotFound.

export interface FlagChange { username: string, changed: boolean }

async function setFlag (db: Db, username: string, flag: 'is_creator' | 'is_active', value: boolean, { revokeTokens = false } = {}): Promise<FlagChange> {
  const name = normaliseUsername(username)
  const user = await db.selectFrom('user').select(['id', flag]).where('username', '=', name).executeTakeFirst()
  if (!user) throw new AppError('ProfileNotFound', `no user named ${name}`)
  if (Boolean(user[flag]) === value) return { username: name, changed: false }
  await db.updateTable('user')
    .set(eb => ({ [flag]: value, updated_at: writeTimeIso(), ...(revokeTokens ? { token_generation: eb('token_generation', '+', 1) } : {}) }))
    .where('id', '=', user.id).execute()
  return { username: name, changed: true }
}

export const grantCreator = (db: Db, username: string) => setFlag(db, username, 'is_creator', true)
export const revokeCreator = (db: Db, username: string) => setFlag(db, username, 'is_creator', false)
// A ban also ends every token issued so far: an unban does not bring them back.
export const banUser = (db: Db, username: string) => setFlag(db, username, 'is_active', false, { revokeTokens: true })
export const unbanUser = (db: Db, username: string) => setFlag(db, username, 'is_active', true)

/** Every access token of the user issued so far stops working at once (`user revoke-tokens`). */
export async function revokeTokens (db: Db, username: string): Promise<{ username: string, generation: number }> {
  const name = normaliseUsername(username)
  const row = await db.updateTable('user')
    .set(eb => ({ token_generation: eb('token_generation', '+', 1), updated_at: writeTimeIso() }))
    .where('username', '=', name).returning('token_generation').executeTakeFirst()
  if (!row) throw new AppError('ProfileNotFound', `no user named ${name}`)
  return { username: name, generation: Number(row.token_generation) }
}
