import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdempotencyHeaders, IfMatchHeaders, NoContent, NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { Post, PostCreate, PostList, PostListQuery, PostParams, PostPatch, PostUpdate } from '../../../schemas/posts.js'
import { created, listReply } from '../replies.js'
import { authErrors, optionalSecurity, security, callerId } from '../guards.js'
import { createPost, deletePost, getPost, listPosts, postFields, updatePost } from '../../domain/posts.js'
import { registerUpdates } from '../updates.js'

const tags = ['posts']
const creatorOf = (post: Post) => post.creator.id

/** Posts: public reads, writes by creators (create) and owners (change) in an authenticated group. */
const posts: FastifyPluginAsyncTypebox = async fastify => {
  fastify.get(
    '/posts',
    {
      schema: {
        tags,
        operationId: 'listPosts',
        summary: 'Published posts, newest activity first; filters type, tags (all of), creator_id',
        querystring: PostListQuery,
        response: { 200: ref(PostList), ...errorResponses('ValidationFailed') }
      }
    },
    async (request, reply) => {
      const { posts, total } = await listPosts(fastify.db, request.query)
      return listReply(request, reply, 'posts', posts, total, request.query)
    }
  )

  fastify.get(
    '/posts/:postId',
    {
      onRequest: fastify.authenticateIfToken,
      config: { etag: true },
      schema: {
        tags,
        operationId: 'getPost',
        security: optionalSecurity,
        summary: 'One post; a draft or scheduled post only for its creator (others get 404)',
        params: PostParams,
        response: { 200: ref(Post), 304: NotModified, ...errorResponses('ValidationFailed', 'PostNotFound', 'InvalidCredentials', 'UserIsBanned') }
      }
    },
    async request => getPost(fastify.db, request.params.postId, callerId(request))
  )

  await fastify.register(writes)
}

const writes: FastifyPluginAsyncTypebox = async fastify => {
  fastify.addHook('onRequest', fastify.authenticate)

  fastify.post(
    '/posts',
    {
      onRequest: fastify.requireCreator,
      config: { idempotent: true },
      schema: {
        tags,
        security,
        operationId: 'createPost',
        summary: 'Create a post (active creators)',
        headers: IdempotencyHeaders,
        body: ref(PostCreate),
        response: {
          201: ref(Post),
          ...errorResponses(...authErrors, 'UserNotCreator', 'ValidationFailed', 'MalformedBody', 'UnsupportedMediaType', 'Conflict')
        }
      }
    },
    async (request, reply) => {
      const post = await createPost(fastify.db, request.user.id, request.body)
      return created(reply, `/v1/posts/${post.id}`, post)
    }
  )

  registerUpdates(fastify, {
    url: '/posts/:postId',
    tags,
    params: PostParams,
    body: PostUpdate,
    patchBody: PostPatch,
    response: Post,
    errors: [
      ...authErrors,
      'UserNotOwner',
      'UserNotCreator',
      'PostNotFound',
      'ValidationFailed',
      'MalformedBody',
      'UnsupportedMediaType',
      'Conflict',
      'PreconditionFailed'
    ],
    put: {
      operationId: 'updatePost',
      summary: 'Replace the writable fields of a post (owner); moves it up the default order'
    },
    patch: {
      operationId: 'patchPost',
      summary: 'Change some fields of a post (owner), a JSON Merge Patch; moves it up the default order'
    },
    fieldsOf: postFields,
    owner: { of: creatorOf, creator: true },
    run: (request, _reply, change) => updatePost(fastify.db, request.params.postId, request.user.id, change, request.owned)
  })

  fastify.delete(
    '/posts/:postId',
    {
      config: { owner: { of: creatorOf } },
      schema: {
        tags,
        security,
        operationId: 'deletePost',
        summary: 'Delete a post with its reviews and comments (owner)',
        params: PostParams,
        headers: IfMatchHeaders,
        response: { 204: NoContent, ...errorResponses(...authErrors, 'UserNotOwner', 'PostNotFound', 'ValidationFailed', 'PreconditionFailed') }
      }
    },
    async (request, reply) => {
      await deletePost(fastify.db, request.params.postId, request.user.id, request.owned)
      return reply.code(204).send(null)
    }
  )
}

export default posts
