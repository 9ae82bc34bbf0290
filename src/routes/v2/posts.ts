import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { PostCursorPage, PostCursorQuery } from '../../../schemas/posts-v2.js'
import { Cursors } from '../../domain/cursor.js'
import { listPostsAfter, type PostPosition } from '../../domain/posts.js'

const isPosition = (v: unknown): v is PostPosition =>
  typeof v === 'object' && v !== null && Object.keys(v).length === 2 &&
  typeof (v as PostPosition).sort_at === 'string' && !Number.isNaN(Date.parse((v as PostPosition).sort_at)) &&
  typeof (v as PostPosition).id === 'string'

/** v2 posts: the same posts as v1, listed by keyset cursor. */
const posts: FastifyPluginAsyncTypebox = async (fastify) => {
  const cursors = new Cursors(fastify.config.jwtSecret, 'v2/posts', isPosition)

  fastify.get('/posts', {
    schema: {
      tags: ['posts'],
      operationId: 'listPostsByCursor',
      summary: 'Published posts, newest activity first, by keyset cursor; filters type, tags (all of), creator_id',
      querystring: PostCursorQuery,
      response: { 200: ref(PostCursorPage), ...errorResponses('ValidationFailed') }
    }
  }, async (request) => {
    const { cursor, ...query } = request.query
    const page = await listPostsAfter(fastify.db, query, cursor === undefined ? undefined : cursors.decode(cursor))
    return { posts: page.posts, total: page.total, next_cursor: page.next ? cursors.encode(page.next) : null }
  })
}

export default posts
