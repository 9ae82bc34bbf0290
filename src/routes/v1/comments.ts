import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IfMatchHeaders, NoContent } from '../../../schemas/common.js'
import { Comment, CommentList, CommentListQuery, CommentParams, CommentPatch, CommentWrite } from '../../../schemas/comments.js'
import { errorResponses } from '../../../schemas/problems.js'
import { commentFields, createComment, deleteComment, getComment, listComments, updateComment } from '../../domain/comments.js'
import { authErrors, security } from '../guards.js'
import { registerUpdates } from '../updates.js'
import { postChildRoutes } from './post-children.js'

const tags = ['comments']
const authorOf = (c: Comment) => c.author.id

/** The author's own writes: replacing, patching and deleting a comment. */
const authorWrites: FastifyPluginAsyncTypebox = async fastify => {
  registerUpdates(fastify, {
    url: '/posts/:postId/comments/:commentId',
    tags,
    params: CommentParams,
    body: CommentWrite,
    patchBody: CommentPatch,
    response: Comment,
    errors: [
      ...authErrors,
      'UserNotOwner',
      'PostNotFound',
      'ResourceNotFound',
      'ValidationFailed',
      'MalformedBody',
      'UnsupportedMediaType',
      'PreconditionFailed'
    ],
    put: {
      operationId: 'updateComment',
      summary: 'Replace the text of a comment (author)'
    },
    patch: {
      operationId: 'patchComment',
      summary: 'Change a comment (author), a JSON Merge Patch'
    },
    fieldsOf: commentFields,
    owner: { of: authorOf },
    run: (request, _reply, change) =>
      updateComment(fastify.db, request.params.postId, request.params.commentId, request.user.id, change, request.owned)
  })

  fastify.delete(
    '/posts/:postId/comments/:commentId',
    {
      config: { owner: { of: authorOf } },
      schema: {
        tags,
        security,
        operationId: 'deleteComment',
        summary: 'Delete a comment (author)',
        params: CommentParams,
        headers: IfMatchHeaders,
        response: {
          204: NoContent,
          ...errorResponses(...authErrors, 'UserNotOwner', 'PostNotFound', 'ResourceNotFound', 'ValidationFailed', 'PreconditionFailed')
        }
      }
    },
    async (request, reply) => {
      await deleteComment(fastify.db, request.params.postId, request.params.commentId, request.user.id, request.owned)
      return reply.code(204).send(null)
    }
  )
}

/** Comments on a post: public reads; any active user writes; only the author changes one. */
export default postChildRoutes({
  plural: 'comments',
  idParam: 'commentId',
  tags,
  list: {
    operationId: 'listComments',
    summary: 'The comments of a post, oldest first',
    querystring: CommentListQuery,
    response: CommentList,
    run: listComments
  },
  get: {
    operationId: 'getComment',
    summary: 'One comment of a post',
    params: CommentParams,
    response: Comment,
    run: getComment
  },
  create: {
    operationId: 'createComment',
    summary: "Comment on a post (any active user); alerts the post's creator",
    body: CommentWrite,
    response: Comment,
    run: createComment
  },
  moreWrites: authorWrites
})
