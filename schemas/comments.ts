import { Type, type Static } from './typebox.js'
import { DateTime, ListOf, ListQuery, Params, Uuid, ref } from './common.js'
import { MergePatchOf } from './merge-patch.js'
import { UserSummary } from './posts.js'

export const Comment = Type.Object({
  id: Uuid,
  post_id: Uuid,
  author: ref(UserSummary),
  text: Type.String(),
  created_at: DateTime,
  updated_at: DateTime
}, { $id: 'Comment', title: 'Comment', additionalProperties: false })
export type Comment = Static<typeof Comment>

/** The one writable field, the same body for POST and PUT. */
export const CommentWrite = Type.Object({
  text: Type.String({ minLength: 1, maxLength: 10_000, examples: ['Thanks, this helped.'] })
}, { $id: 'CommentWrite', title: 'CommentWrite', additionalProperties: false })
export type CommentWrite = Static<typeof CommentWrite>

export const CommentPatch = MergePatchOf(CommentWrite, {
  $id: 'CommentPatch',
  title: 'CommentPatch',
  description: 'JSON Merge Patch of CommentWrite: a member present replaces the field, an absent one is kept; text cannot be cleared'
})
export type CommentPatch = Static<typeof CommentPatch>

export const CommentList = ListOf('comments', ref(Comment), 'CommentList')

export const COMMENT_SORTABLE = ['created_at', 'updated_at'] as const
// A conversation reads oldest first.
export const CommentListQuery = ListQuery(COMMENT_SORTABLE, {}, 'created_at')
export type CommentListQuery = Static<typeof CommentListQuery>

export const CommentParams = Params({ postId: Uuid, commentId: Uuid })
