import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdempotencyHeaders, IfMatchHeaders, NoContent, NotModified, ref } from '../../../schemas/common.js'
import { Comment, CommentList, CommentListQuery, CommentParams, CommentWrite } from '../../../schemas/comments.js'
import { PostParams } from '../../../schemas/posts.js'
import { errorResponses } from '../../../schemas/problems.js'
import { createComment, deleteComment, getComment, listComments, updateComment } from '../../domain/comments.js'
import { created, listReply } from '../http.js'
import { authErrors, ownerAndIfMatch, optionalSecurity, security, callerId } from '../guards.js'

const tags = ['comments']
const authorOf = (c: Comment) => c.author.id

/** Comments on a post: public reads; any active user writes; only the author changes one. */
const comments: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/posts/:postId/comments', {
    onRequest: fastify.authenticateIfToken,
    schema: {
      tags,
      operationId: 'listComments', description: 'Anyone for a published post; with a token, the creator of a draft too. The comments of a post, oldest first. Changes nothing.', security: optionalSecurity,
      summary: 'The comments of a post, oldest first',
      params: PostParams,
      querystring: CommentListQuery,
      response: { 200: ref(CommentList), ...errorResponses('ValidationFailed', 'PostNotFound', 'InvalidCredentials', 'UserIsBanned') }
    }
  }, async (request, reply) => {
    const { comments, total } = await listComments(fastify.db, request.params.postId, callerId(request), request.query)
    return listReply(request, reply, 'comments', comments, total, request.query)
  })

  fastify.get('/posts/:postId/comments/:commentId', {
    onRequest: fastify.authenticateIfToken,
    config: { etag: true },
    schema: {
      tags,
      operationId: 'getComment', description: 'Anyone for a published post; with a token, the creator of a draft too. One comment. Changes nothing.', security: optionalSecurity,
      summary: 'One comment of a post',
      params: CommentParams,
      response: { 200: ref(Comment), 304: NotModified, ...errorResponses('ValidationFailed', 'PostNotFound', 'ResourceNotFound', 'InvalidCredentials', 'UserIsBanned') }
    }
  }, async (request) => getComment(fastify.db, request.params.postId, request.params.commentId, callerId(request)))

  await fastify.register(writes)
}

const writes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)

  fastify.post('/posts/:postId/comments', {
    config: { idempotent: true },
    schema: {
      tags,
      security,
      operationId: 'createComment', description: 'Any signed-in active user: adds a comment and alerts the post\'s creator (an alert and an e-mail) unless the author is the creator.',
      summary: 'Comment on a post (any active user); alerts the post\'s creator',
      params: PostParams,
      headers: IdempotencyHeaders,
      body: ref(CommentWrite),
      response: {
        201: ref(Comment),
        ...errorResponses(...authErrors, 'PostNotFound', 'ValidationFailed', 'MalformedBody', 'UnsupportedMediaType', 'Conflict')
      }
    }
  }, async (request, reply) => {
    const comment = await createComment(fastify.db, request.params.postId, request.user.id, request.body)
    return created(reply, `/v1/posts/${comment.post_id}/comments/${comment.id}`, comment)
  })

  fastify.put('/posts/:postId/comments/:commentId', {
    config: { etag: true },
    schema: {
      tags,
      security,
      operationId: 'updateComment', description: 'The comment\'s author only (others 403): replaces its text. A stale If-Match is 412 and changes nothing.',
      summary: 'Replace the text of a comment (author)',
      params: CommentParams,
      headers: IfMatchHeaders,
      body: ref(CommentWrite),
      response: {
        200: ref(Comment),
        ...errorResponses(...authErrors, 'UserNotOwner', 'PostNotFound', 'ResourceNotFound', 'ValidationFailed',
          'MalformedBody', 'UnsupportedMediaType', 'PreconditionFailed')
      }
    }
  }, async (request, reply) => updateComment(fastify.db, request.params.postId, request.params.commentId, request.user.id,
    request.body, ownerAndIfMatch(request, reply, authorOf)))

  fastify.delete('/posts/:postId/comments/:commentId', {
    schema: {
      tags,
      security,
      operationId: 'deleteComment', description: 'The comment\'s author only (others 403): deletes the comment. A stale If-Match is 412 and changes nothing.',
      summary: 'Delete a comment (author)',
      params: CommentParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...authErrors, 'UserNotOwner', 'PostNotFound', 'ResourceNotFound', 'ValidationFailed', 'PreconditionFailed') }
    }
  }, async (request, reply) => {
    await deleteComment(fastify.db, request.params.postId, request.params.commentId, request.user.id, ownerAndIfMatch(request, reply, authorOf))
    return reply.code(204).send(null)
  })
}

export default comments
