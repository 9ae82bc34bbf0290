import type { Test } from 'tap'
import { AppError } from '../schemas/problems.js'
import { createDb, type Db } from '../src/db/dialect.js'
import { signUp } from '../src/domain/users.js'
import { migratedDatabase } from './helper.js'

// What the domain tests share: the domain functions on a migrated database of this run's dialect,
// no app and no HTTP. The routes' tests keep the contract (statuses, bodies, headers).

export async function openDb (t: Test): Promise<Db> {
  const { url, schema, image } = await migratedDatabase(t)
  const db = createDb(url, { schema, image })
  t.teardown(() => db.destroy())
  return db
}

const verification = { key: Buffer.alloc(32, 7), ttlSeconds: 3600, url: 'http://127.0.0.1/verify-email' }

/** A new account's id; its address `<username>@example.com`, unverified. */
export async function person (db: Db, username: string): Promise<string> {
  const me = await signUp(db, { username, email: `${username}@example.com`, password: 'correct horse battery', first_name: username },
    verification, 10)
  return me.id
}

/** The problem code a domain call refuses with, or undefined when it succeeds. */
export async function code (work: Promise<unknown>): Promise<string | undefined> {
  try { await work } catch (err) { return err instanceof AppError ? err.code : `not an AppError: ${String(err)}` }
  return undefined
}
