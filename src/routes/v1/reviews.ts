import { Review, ReviewCreate, ReviewList, ReviewListQuery, ReviewParams } from '../../../schemas/reviews.js'
import { createReview, getReview, listReviews } from '../../domain/reviews.js'
import { postChildRoutes } from './post-children.js'

/** Reviews of a post: public reads, one review per active user and post. */
export default postChildRoutes({
  plural: 'reviews',
  idParam: 'reviewId',
  tags: ['reviews'],
  list: {
    operationId: 'listReviews', description: 'Anyone for a published post; with a token, the creator of a draft too. The reviews of a post, newest first. Changes nothing.',
    summary: 'The reviews of a post, newest first; filter rating',
    querystring: ReviewListQuery,
    response: ReviewList,
    run: listReviews
  },
  get: {
    operationId: 'getReview', description: 'Anyone for a published post; with a token, the creator of a draft too. One review. Changes nothing.',
    summary: 'One review of a post (where a created review\'s Location points)',
    params: ReviewParams,
    response: Review,
    run: getReview
  },
  create: {
    operationId: 'createReview', description: 'Any signed-in active user, once per post (409 on a second): adds a review and alerts the post\'s creator (an alert and an e-mail) unless the reviewer is the creator.',
    summary: 'Review a post (any active user, once per post); alerts the post\'s creator',
    body: ReviewCreate,
    response: Review,
    run: createReview
  }
})
