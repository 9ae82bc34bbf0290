import type { FastifyReply } from 'fastify'
import { AppError } from '../../plugins/problems.js'
import { LIMIT_DEFAULT } from '../../schemas/common.js'
import type { ProblemCode } from '../../schemas/problems.js'
import type { Db } from '../db/dialect.js'
import type { Page } from './list.js'

/** The generic pieces of a resource: load-or-404, owners of a page, 201 + Location, the two paging forms. */

/** Awaits a single-row query and throws the resource's NotFound code when it found nothing. */
export async function found<T> (row: Promise<T | undefined>, code: ProblemCode, detail: string): Promise<T> {
  const value = await row
  if (value === undefined) throw new AppError(code, detail)
  return value
}

/** 201 with the new resource's Location (DESIGN §1). */
export function created<T> (reply: FastifyReply, location: string, resource: T): T {
  reply.code(201).header('location', location)
  return resource
}

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

export interface PagingQuery {
  limit?: number
  offset?: number
  page?: number
  count?: number
}

/**
 * A list that accepts both paging forms: `limit`/`offset` or the spec's `page`/`count`
 * (1-based page). Mixing them is a 422 that names the offending parameter.
 */
export function pageOrCount (query: PagingQuery): Page {
  const offsetForm = query.limit !== undefined || query.offset !== undefined
  const pageForm = query.page !== undefined || query.count !== undefined
  if (offsetForm && pageForm) {
    throw new AppError('ValidationFailed', 'page with limit/offset or with page/count, not both', {
      errors: [{
        in: 'query',
        field: query.page !== undefined ? '/page' : '/count',
        rule: 'pagingForm',
        message: 'cannot be combined with limit/offset: use one paging form'
      }]
    })
  }
  if (pageForm) {
    const count = query.count ?? LIMIT_DEFAULT
    return { limit: count, offset: ((query.page ?? 1) - 1) * count, style: 'page' }
  }
  return { limit: query.limit ?? LIMIT_DEFAULT, offset: query.offset ?? 0 }
}
