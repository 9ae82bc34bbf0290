import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ref } from '../../../schemas/common.js'
import { CreatorParams, CreatorPostListQuery, PostList } from '../../../schemas/posts.js'
import { errorResponses } from '../../../schemas/problems.js'
import { listReply } from '../replies.js'
import { listCreatorPosts } from '../../domain/posts.js'

/** GET /creators/{profileId}/posts: a creator's published posts (public); the creator is checked first. */
const creatorPosts: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/creators/:profileId/posts', {
    schema: {
      tags: ['creators'],
      operationId: 'listCreatorPosts',
      summary: 'A creator\'s published posts, newest activity first',
      params: CreatorParams,
      querystring: CreatorPostListQuery,
      response: { 200: ref(PostList), ...errorResponses('ValidationFailed', 'ProfileNotFound', 'ProfileNotCreator') }
    }
  }, async (request, reply) => {
    const { posts, total } = await listCreatorPosts(fastify.db, request.params.profileId, request.query)
    return listReply(request, reply, 'posts', posts, total, request.query)
  })
}

export default creatorPosts
