import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotModified, ref } from '../../../schemas/common.js'
import { CreatorPostListQuery, Post, PostList, UserPostParams } from '../../../schemas/posts.js'
import { errorResponses } from '../../../schemas/problems.js'
import { listReply } from '../replies.js'
import { getUserPost, listPosts } from '../../domain/posts.js'
import { listMyMedia, toMedia } from '../../domain/media.js'
import { MyMediaList, MyMediaListQuery } from '../../../schemas/media.js'
import { authErrors, security } from '../guards.js'

const tags = ['users']

/** /users/…: private, self only; the identity comes from the token. */
const users: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)

  // A static route: find-my-way tries it before /users/:userId/…, so `me` is never an id.
  fastify.get('/users/me/posts', {
    schema: {
      tags,
      security,
      operationId: 'listMyPosts',
      summary: 'The caller\'s own posts, drafts and scheduled ones too',
      querystring: CreatorPostListQuery,
      response: { 200: ref(PostList), ...errorResponses(...authErrors, 'ValidationFailed') }
    }
  }, async (request, reply) => {
    const { posts, total } = await listPosts(fastify.db, request.query, { creatorId: request.user.id, unpublished: true })
    return listReply(request, reply, 'posts', posts, total, request.query)
  })

  fastify.get('/users/me/media', {
    schema: {
      tags: ['users', 'media'],
      security,
      operationId: 'listMyMedia',
      summary: 'The caller\'s own uploads and their storage quota',
      querystring: MyMediaListQuery,
      response: { 200: MyMediaList, ...errorResponses(...authErrors, 'ValidationFailed') }
    }
  }, async (request, reply) => {
    const quota = fastify.config.MEDIA_QUOTA_BYTES
    const { rows, usage } = await listMyMedia(fastify.db, request.user.id, request.query, request.query)
    const page = listReply(request, reply, 'media', rows.map(row => toMedia(row, fastify.config.mediaPublicUrl)), usage.files, request.query)
    return { ...page, used_bytes: usage.used_bytes, quota_bytes: quota, available_bytes: Math.max(0, quota - usage.used_bytes - usage.reserved_bytes) }
  })

  fastify.get('/users/:userId/posts/:postId', {
    // self and an active creator first (banned users stop at authenticate), then the mail limits; the post must be the caller's too
    config: { etag: true, owner: { param: 'userId', creator: true, of: (post: Post) => post.creator.id } },
    preHandler: fastify.mailRateLimit,
    schema: {
      tags,
      security,
      operationId: 'getUserPost',
      summary: 'One of the caller\'s own posts; queues an e-mail about it to the caller',
      params: UserPostParams,
      response: { 200: ref(Post), 304: NotModified, ...errorResponses(...authErrors, 'UserNotOwner', 'UserNotCreator', 'PostNotFound', 'ValidationFailed') }
    }
  }, async (request) => getUserPost(fastify.db, request.params.userId, request.params.postId, request.owned))
}

export default users
