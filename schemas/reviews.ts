import { Type, type Static } from './typebox.js'
import { DateTime, ListOf, ListQuery, OptionalOrNull, Params, Uuid, ref, Nullable } from './common.js'
import { MergePatchOf } from './merge-patch.js'
import { UserSummary } from './posts.js'

export const Review = Type.Object({
  id: Uuid,
  post_id: Uuid,
  author: ref(UserSummary),
  rating: Type.Integer({ minimum: 1, maximum: 5, examples: [5] }),
  text: Nullable(Type.String()),
  created_at: DateTime
}, { $id: 'Review', title: 'Review', additionalProperties: false })
export type Review = Static<typeof Review>

/** One review per user and post (409 on a second); `rating` is required, `text` optional. POST and PUT take it. */
export const ReviewCreate = Type.Object({
  rating: Type.Integer({ minimum: 1, maximum: 5, examples: [5] }),
  text: OptionalOrNull(Type.String({ maxLength: 10_000, examples: ['Clear and useful.'] }))
}, { $id: 'ReviewCreate', title: 'ReviewCreate', additionalProperties: false })
export type ReviewCreate = Static<typeof ReviewCreate>

export const ReviewPatch = MergePatchOf(ReviewCreate, {
  $id: 'ReviewPatch',
  title: 'ReviewPatch',
  description: 'JSON Merge Patch of ReviewCreate: a member present replaces the field, null clears the text, an absent one is kept'
})
export type ReviewPatch = Static<typeof ReviewPatch>

export const ReviewList = ListOf('reviews', ref(Review), 'ReviewList')

export const REVIEW_SORTABLE = ['created_at', 'rating'] as const
export const ReviewListQuery = ListQuery(REVIEW_SORTABLE, {
  rating: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, description: 'only reviews with this rating' }))
}, '-created_at')
export type ReviewListQuery = Static<typeof ReviewListQuery>

export const ReviewParams = Params({ postId: Uuid, reviewId: Uuid })
