import { randomUUID } from 'node:crypto'
import { cachedRowStatement, cachedStatementPerShape } from '../db/statement-cache.js'
import type { SelectQueryBuilder } from '../db/kysely.js'
import type { Database, ReviewTable } from '../db/schema.js'
import { changeRow, rowVersion, sameVersion } from '../db/row-change.js'
import { writeTogether } from '../db/write-together.js'
import { AppError } from '../../schemas/problems.js'
import type { Review, ReviewCreate, ReviewListQuery } from '../../schemas/reviews.js'
import { lockForUpdate } from '../db/row-lock.js'
import { formatDateTime } from '../db/date-time-format.js'
import { writeTimeIso } from '../db/clock.js'
import { alertPostCreator, alertingValues, alertingWrite, type AlertingValues } from './alerts.js'
import { compiledList } from '../db/paging.js'
import { parseSort } from './list.js'
import type { Executor } from '../db/dialect.js'
import { assertPostVisible, isVisible, orPostGone, postNotFound } from './posts.js'
import { uniqueViolation } from '../db/unique-violation.js'
import { PERSON_COLUMNS, toPerson } from './person.js'
import { bodyOf, type Change } from './merge-patch.js'

/** Runs against the review as it is, before anything changes: the route's owner and If-Match checks. */
export type ReviewGuard = (current: Review) => void

const SORT_COLUMNS = { created_at: 'review.created_at', rating: 'review.rating' }
const DEFAULT_SORT = [{ column: 'review.created_at', direction: 'desc' as const }]

function selectReviews (db: Executor, postId: string) {
  return withAuthor(db.selectFrom('review')).where('review.post_id', '=', postId)
}

/** A review's columns and its author's, from `review` (the table, or a CTE of its rows named so). */
function withAuthor<Q extends SelectQueryBuilder<Database & { review: ReviewTable }, 'review', {}>> (from: Q) {
  return (from as unknown as SelectQueryBuilder<Database, 'review', {}>)
    .innerJoin('user', 'user.id', 'review.author_id')
    .innerJoin('profile', 'profile.id', 'review.author_id')
    .select(['review.id', 'review.post_id', 'review.author_id', 'review.rating', 'review.text', 'review.created_at',
      ...PERSON_COLUMNS])
}

type ReviewRow = Awaited<ReturnType<ReturnType<typeof selectReviews>['executeTakeFirstOrThrow']>>

function toReview (row: ReviewRow): Review {
  return {
    id: row.id,
    post_id: row.post_id,
    author: toPerson(row.author_id, row),
    rating: row.rating,
    text: row.text,
    created_at: formatDateTime(row.created_at)
  }
}

const reviewList = compiledList((db, v: { postId: string, rating?: number }) => {
  const q = selectReviews(db, v.postId)
  return v.rating === undefined ? q : q.where('review.rating', '=', v.rating)
})

/** The reviews of a post the viewer can see (404 PostNotFound otherwise). */
export async function listReviews (db: Executor, postId: string, viewerId: string | undefined, query: ReviewListQuery) {
  await assertPostVisible(db, postId, viewerId)
  const sort = parseSort(query.sort, SORT_COLUMNS, DEFAULT_SORT, 'review.id')
  const { rows, total } = await reviewList.page(db, { postId, rating: query.rating }, sort, query)
  return { items: rows.map(toReview), total }
}

const reviewOfPost = cachedRowStatement((db, postId: string, reviewId: string) => selectReviews(db, postId).where('review.id', '=', reviewId))

/** One review; a review of another post is 404 like a missing one. */
export async function getReview (db: Executor, postId: string, reviewId: string, viewerId: string | undefined): Promise<Review> {
  await assertPostVisible(db, postId, viewerId)
  const row = await reviewOfPost(db, postId, reviewId)
  if (!row) throw new AppError('ResourceNotFound', `no review ${reviewId} on post ${postId}`)
  return toReview(row)
}

/**
 * One review per user and post (409, from review_post_author_unique, so concurrent reviews by one
 * user cannot both land), of a post the author can see (404 PostNotFound otherwise); nothing is
 * written on either. The post's creator is alerted in the same write (writeTogether: one statement
 * on PostgreSQL).
 */
export async function createReview (db: Executor, postId: string, authorId: string, input: ReviewCreate): Promise<Review> {
  const id = randomUUID()
  const createdAt = writeTimeIso()
  const text = input.text ?? null
  try {
    const row = await orPostGone(postId, writeTogether(
      db,
      async db => {
        const values = { ...alertingValues(postId, authorId, 'review', id), id, rating: input.rating, text, createdAt }
        return (await insertReviewReturning(db, undefined, values))[0]
      },
      async trx => {
        await assertPostVisible(trx, postId, authorId)
        await insertReview(trx, undefined, { id, postId, authorId, rating: input.rating, text, createdAt })
        // the alert tells of this review, and goes when it goes (alert.review_id, ON DELETE CASCADE)
        await alertPostCreator(trx, alertingValues(postId, authorId, 'review', id))
        return reviewOfPost(trx, postId, id)
      }
    ))
    if (!row) throw postNotFound(postId)
    return toReview(row)
  } catch (err) {
    if (uniqueViolation(err) !== undefined) throw new AppError('Conflict', 'you have already reviewed this post')
    throw err
  }
}

type ReviewInsert = { id: string, postId: string, authorId: string, rating: number, text: string | null, createdAt: string }
const insertReview = cachedStatementPerShape((db, _: undefined, v: ReviewInsert) =>
  db.insertInto('review').values({ id: v.id, post_id: v.postId, author_id: v.authorId, rating: v.rating, text: v.text, created_at: v.createdAt }))

/**
 * The create in one statement (writeTogether's): the review inserted from the visible post (none:
 * no row, so nothing is written), beside its creator's alert naming it, read back with its author.
 */
const insertReviewReturning = cachedStatementPerShape((db, _: undefined, v: AlertingValues & {
  id: string, rating: number, text: string | null, createdAt: string
}) =>
  withAuthor(
    alertingWrite(db, v)
      .with('new_review', q => q.insertInto('review')
        .columns(['id', 'post_id', 'author_id', 'rating', 'text', 'created_at'])
        .expression(eb => eb.selectFrom('parent').select(eb => [
          eb.val(v.id).as('id'),
          'parent.id as post_id',
          eb.val(v.actorId).as('author_id'),
          eb.val(v.rating).as('rating'),
          eb.val(v.text).as('text'),
          eb.val(v.createdAt).as('created_at')
        ]))
        .returningAll())
      .selectFrom('new_review as review')
  )
)

/**
 * PUT and PATCH: replaces the rating and text. The author and the post stay, so the rule of one
 * review per user and post holds as it was. The guard and the merge judge the review as it is
 * written (changeRow).
 */
export async function updateReview (db: Executor, postId: string, reviewId: string, viewerId: string, change: Change<Review, ReviewCreate>,
  guard: ReviewGuard): Promise<Review> {
  return changeRow(db, {
    lock: db => db.selectFrom('review').select('id').where('id', '=', reviewId),
    read: async db => {
      const row = await reviewToChange(db, postId, reviewId)
      if (!row || !isVisible(row, viewerId)) {
        // the answer getReview gives: 404 PostNotFound for a post the viewer cannot see, before the review's own 404
        await assertPostVisible(db, postId, viewerId)
        throw new AppError('ResourceNotFound', `no review ${reviewId} on post ${postId}`)
      }
      const current = toReview(row)
      guard(current)
      const input = bodyOf(change, current)
      return { version: row.version, rating: input.rating, text: input.text ?? null }
    },
    statement: async (db, { version, rating, text }) => {
      const [row] = await updateReviewReturning(db, undefined, { id: reviewId, postId, version: version!, rating, text })
      return row && toReview(row)
    },
    steps: async (trx, { rating, text }) => {
      await trx.updateTable('review').set({ rating, text }).where('id', '=', reviewId).execute()
      return toReview((await reviewOfPost(trx, postId, reviewId))!)
    }
  })
}

/** The review a change reads, as getReview reads it, with its post's visibility and the row's version (changeRow), in one read. */
const reviewToChange = cachedRowStatement((db, postId: string, reviewId: string) =>
  selectReviews(db, postId).innerJoin('post', 'post.id', 'review.post_id')
    .select(['post.published_at', 'post.creator_id', rowVersion(db, 'review').as('version')]).where('review.id', '=', reviewId))

/** The update in one statement (changeRow's), where the review still has the version read, read back with its author. */
type ReviewChange = { id: string, postId: string, version: string, rating: number, text: string | null }
const updateReviewReturning = cachedStatementPerShape((db, _: undefined, v: ReviewChange) =>
  withAuthor(
    db.with('changed', q => q.updateTable('review').set({ rating: v.rating, text: v.text })
      .where('review.id', '=', v.id).where('review.post_id', '=', v.postId).where(sameVersion('review', v.version)).returningAll())
      .selectFrom('changed as review')
  ))

/** The PUT body that keeps a review as it is: what a PATCH merges into. */
export function reviewFields (review: Review): ReviewCreate {
  return { rating: review.rating, text: review.text }
}

/**
 * Withdraws a review: the alert it raised goes with it (ON DELETE CASCADE), with the alert's
 * e-mail while still unsent; the author may review the post again afterwards.
 */
export async function deleteReview (db: Executor, postId: string, reviewId: string, viewerId: string, guard: ReviewGuard): Promise<void> {
  await db.transaction().execute(async (trx) => {
    guard(await lockReview(trx, postId, reviewId, viewerId))
    const alerts = trx.selectFrom('alert').select('id').where('review_id', '=', reviewId)
    await trx.deleteFrom('outbox_message').where('alert_id', 'in', alerts).where('sent_at', 'is', null).execute()
    await trx.deleteFrom('review').where('id', '=', reviewId).execute()
  })
}

/** The review to change, locked until the transaction ends. */
async function lockReview (trx: Executor, postId: string, reviewId: string, viewerId: string): Promise<Review> {
  await lockForUpdate(trx, trx.selectFrom('review').select('id').where('id', '=', reviewId))
  return getReview(trx, postId, reviewId, viewerId)
}
