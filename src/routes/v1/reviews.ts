import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdempotencyHeaders, NotModified, ref } from '../../../schemas/common.js'
import { PostParams } from '../../../schemas/posts.js'
import { errorResponses } from '../../../schemas/problems.js'
import { Review, ReviewCreate, ReviewList, ReviewListQuery, ReviewParams } from '../../../schemas/reviews.js'
import { created, listReply } from '../http.js'
import { createReview, getReview, listReviews } from '../../domain/reviews.js'
import { optionalSecurity, security, callerId } from '../guards.js'

const tags = ['reviews']

/** Reviews of a post: public reads, one review per active user and post. */
const reviews: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/posts/:postId/reviews', {
    onRequest: fastify.authenticateIfToken,
    schema: {
      tags,
      operationId: 'listReviews', description: 'Anyone for a published post; with a token, the creator of a draft too. The reviews of a post, newest first. Changes nothing.', security: optionalSecurity,
      summary: 'The reviews of a post, newest first; filter rating',
      params: PostParams,
      querystring: ReviewListQuery,
      response: { 200: ref(ReviewList), ...errorResponses('ValidationFailed', 'PostNotFound', 'InvalidCredentials', 'UserIsBanned') }
    }
  }, async (request, reply) => {
    const { reviews, total } = await listReviews(fastify.db, request.params.postId, callerId(request), request.query)
    return listReply(request, reply, 'reviews', reviews, total, request.query)
  })

  fastify.get('/posts/:postId/reviews/:reviewId', {
    onRequest: fastify.authenticateIfToken,
    config: { etag: true },
    schema: {
      tags,
      operationId: 'getReview', description: 'Anyone for a published post; with a token, the creator of a draft too. One review. Changes nothing.', security: optionalSecurity,
      summary: 'One review of a post (where a created review\'s Location points)',
      params: ReviewParams,
      response: { 200: ref(Review), 304: NotModified, ...errorResponses('ValidationFailed', 'PostNotFound', 'ResourceNotFound', 'InvalidCredentials', 'UserIsBanned') }
    }
  }, async (request) => getReview(fastify.db, request.params.postId, request.params.reviewId, callerId(request)))

  await fastify.register(writes)
}

const writes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)

  fastify.post('/posts/:postId/reviews', {
    config: { idempotent: true },
    schema: {
      tags,
      security,
      operationId: 'createReview', description: 'Any signed-in active user, once per post (409 on a second): adds a review and alerts the post\'s creator (an alert and an e-mail) unless the reviewer is the creator.',
      summary: 'Review a post (any active user, once per post); alerts the post\'s creator',
      params: PostParams,
      headers: IdempotencyHeaders,
      body: ref(ReviewCreate),
      response: {
        201: ref(Review),
        ...errorResponses('NotAuthenticated', 'InvalidCredentials', 'UserIsBanned', 'PostNotFound', 'ValidationFailed',
          'MalformedBody', 'UnsupportedMediaType', 'Conflict')
      }
    }
  }, async (request, reply) => {
    const review = await createReview(fastify.db, request.params.postId, request.user.id, request.body)
    return created(reply, `/v1/posts/${review.post_id}/reviews/${review.id}`, review)
  })
}

export default reviews
