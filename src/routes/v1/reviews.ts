import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IfMatchHeaders, NoContent } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { Review, ReviewCreate, ReviewList, ReviewListQuery, ReviewParams, ReviewPatch } from '../../../schemas/reviews.js'
import { createReview, deleteReview, getReview, listReviews, reviewFields, updateReview } from '../../domain/reviews.js'
import { authErrors, security } from '../guards.js'
import { registerUpdates } from '../updates.js'
import { postChildRoutes } from './post-children.js'

const tags = ['reviews']
const authorOf = (r: Review) => r.author.id

/** The author's own writes: replacing, patching and withdrawing a review. */
const authorWrites: FastifyPluginAsyncTypebox = async (fastify) => {
  registerUpdates(fastify, {
    url: '/posts/:postId/reviews/:reviewId',
    tags,
    params: ReviewParams,
    body: ReviewCreate,
    patchBody: ReviewPatch,
    response: Review,
    errors: [...authErrors, 'UserNotOwner', 'PostNotFound', 'ResourceNotFound', 'ValidationFailed', 'MalformedBody', 'UnsupportedMediaType',
      'PreconditionFailed'],
    put: {
      operationId: 'updateReview',
      summary: 'Replace the rating and text of a review (author)'
    },
    patch: {
      operationId: 'patchReview',
      summary: 'Change a review (author), a JSON Merge Patch'
    },
    fieldsOf: reviewFields,
    owner: { of: authorOf },
    run: (request, _reply, change) => updateReview(fastify.db, request.params.postId, request.params.reviewId, request.user.id, change, request.owned)
  })

  fastify.delete('/posts/:postId/reviews/:reviewId', {
    config: { owner: { of: authorOf } },
    schema: {
      tags,
      security,
      operationId: 'deleteReview',
      summary: 'Withdraw a review (author)',
      params: ReviewParams,
      headers: IfMatchHeaders,
      response: {
        204: NoContent,
        ...errorResponses(...authErrors, 'UserNotOwner', 'PostNotFound', 'ResourceNotFound', 'ValidationFailed', 'PreconditionFailed')
      }
    }
  }, async (request, reply) => {
    const { postId, reviewId } = request.params
    await deleteReview(fastify.db, postId, reviewId, request.user.id, request.owned)
    return reply.code(204).send(null)
  })
}

/** Reviews of a post: public reads, one review per active user and post; only the author changes or withdraws one. */
export default postChildRoutes({
  plural: 'reviews',
  idParam: 'reviewId',
  tags,
  list: {
    operationId: 'listReviews',
    summary: 'The reviews of a post, newest first; filter rating',
    querystring: ReviewListQuery,
    response: ReviewList,
    run: listReviews
  },
  get: {
    operationId: 'getReview',
    summary: 'One review of a post (where a created review\'s Location points)',
    params: ReviewParams,
    response: Review,
    run: getReview
  },
  create: {
    operationId: 'createReview',
    summary: 'Review a post (any active user, once per post); alerts the post\'s creator',
    body: ReviewCreate,
    response: Review,
    run: createReview
  },
  moreWrites: authorWrites
})
