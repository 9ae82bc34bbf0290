import { randomUUID } from 'node:crypto'
import { cachedRowStatement } from '../db/statement-cache.js'
import { AppError } from '../../schemas/problems.js'
import type { Review, ReviewCreate, ReviewListQuery } from '../../schemas/reviews.js'
import { formatDateTime } from '../db/date-time-format.js'
import { writeTimeIso } from '../db/clock.js'
import { alertPostCreator } from './alerts.js'
import { compiledList, parseSort } from './list.js'
import type { Executor } from '../db/dialect.js'
import { assertPostVisible, isUniqueViolation } from './posts.js'
import { PERSON_COLUMNS, toPerson } from './person.js'

const SORT_COLUMNS = { created_at: 'review.created_at', rating: 'review.rating' }
const DEFAULT_SORT = [{ column: 'review.created_at', direction: 'desc' as const }]

function selectReviews (db: Executor, postId: string) {
  return db.selectFrom('review')
    .innerJoin('user', 'user.id', 'review.author_id')
    .innerJoin('profile', 'profile.id', 'review.author_id')
    .select(['review.id', 'review.post_id', 'review.author_id', 'review.rating', 'review.text', 'review.created_at',
      ...PERSON_COLUMNS])
    .where('review.post_id', '=', postId)
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

/** One review per user and post (409); the post's creator is alerted in the same transaction. */
export async function createReview (db: Executor, postId: string, authorId: string, input: ReviewCreate): Promise<Review> {
  const id = randomUUID()
  try {
    return await db.transaction().execute(async (trx) => {
      await assertPostVisible(trx, postId, authorId)
      await trx.insertInto('review').values({
        id, post_id: postId, author_id: authorId, rating: input.rating, text: input.text ?? null, created_at: writeTimeIso()
      }).execute()
      await alertPostCreator(trx, { postId, actorId: authorId, kind: 'review' })
      return toReview(await selectReviews(trx, postId).where('review.id', '=', id).executeTakeFirstOrThrow())
    })
  } catch (err) {
    // The unique constraint decides, so two concurrent reviews by one user cannot both land.
    if (isUniqueViolation(err)) throw new AppError('Conflict', 'you have already reviewed this post')
    throw err
  }
}
