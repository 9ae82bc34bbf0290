import type { Db } from '../db/dialect.js'
import { AppError } from './errors.js'

/**
 * The owners of rows as the API shows a person: `{id, username, first_name, last_name}`,
 * fetched in one query for a whole page.
 */
export async function ownersById (db: Db, ids: readonly string[]) {
  const unique = [...new Set(ids)]
  if (unique.length === 0) return new Map<string, never>()
  const rows = await db.selectFrom('user')
    .innerJoin('profile', 'profile.id', 'user.id')
    .select(['user.id as id', 'user.username as username', 'profile.first_name as first_name', 'profile.last_name as last_name'])
    .where('user.id', 'in', unique)
    .execute()
  return new Map(rows.map(r => [r.id, r]))
}

/** The owner of one row; the foreign key guarantees it exists. */
export async function ownerOf (db: Db, id: string) {
  const owner = (await ownersById(db, [id])).get(id)
  if (!owner) throw new Error(`user ${id} has no profile`) // unreachable: every user has a profile
  return owner
}

/** The ownership rule: only the owner may act on a resource (403 UserNotOwner otherwise). */
export function assertOwner (callerId: string, ownerId: string): void {
  if (callerId !== ownerId) throw new AppError('UserNotOwner', 'this resource belongs to another user')
}
