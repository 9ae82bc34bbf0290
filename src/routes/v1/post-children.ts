import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static, TSchema } from '../../../schemas/typebox.js'
import { IdempotencyHeaders, NotModified, ref } from '../../../schemas/common.js'
import { PostParams } from '../../../schemas/posts.js'
import { errorResponses } from '../../../schemas/problems.js'
import type { Executor } from '../../db/dialect.js'
import type { Page } from '../../db/paging.js'
import { created, listReply } from '../replies.js'
import { authErrors, callerId, optionalSecurity, security } from '../guards.js'

/** What the OpenAPI document says of one operation. */
interface Described {
  operationId: string
  summary: string
}

interface Child {
  id: string
  post_id: string
}

/** A resource that hangs under a post (comments, reviews): its schemas, texts and domain functions. */
export interface PostChildren<Item extends Child, Query extends TSchema, Body extends TSchema> {
  /** the path segment and the list envelope's key */
  plural: string
  /** the path parameter naming one item, beside `postId` */
  idParam: string
  tags: string[]
  list: Described & {
    querystring: Query
    response: TSchema
    run: (db: Executor, postId: string, viewerId: string | undefined, query: Static<Query>) => Promise<{ items: Item[]; total: number }>
  }
  get: Described & {
    params: TSchema
    response: TSchema
    run: (db: Executor, postId: string, id: string, viewerId: string | undefined) => Promise<Item>
  }
  create: Described & {
    body: Body
    response: TSchema
    run: (db: Executor, postId: string, authorId: string, input: Static<Body>) => Promise<Item>
  }
  /** the resource's other writes, registered after the create behind the same authentication */
  moreWrites?: FastifyPluginAsyncTypebox
}

/**
 * The routes every child of a post has: the list and one item, read by anyone who may see the
 * post (a token shows a draft to its creator), and the create, by any active user.
 */
export function postChildRoutes<Item extends Child, Query extends TSchema, Body extends TSchema> (
  children: PostChildren<Item, Query, Body>
): FastifyPluginAsyncTypebox {
  const { plural, idParam, tags, list, get, create, moreWrites } = children
  const writes: FastifyPluginAsyncTypebox = async (fastify, opts) => {
    fastify.addHook('onRequest', fastify.authenticate)

    fastify.post(
      '/posts/:postId/' + plural,
      {
        config: { idempotent: true },
        schema: {
          tags,
          security,
          operationId: create.operationId,
          summary: create.summary,
          params: PostParams,
          headers: IdempotencyHeaders,
          body: ref(create.body),
          response: {
            201: ref(create.response),
            ...errorResponses(...authErrors, 'PostNotFound', 'ValidationFailed', 'MalformedBody', 'UnsupportedMediaType', 'Conflict')
          }
        }
      },
      async (request, reply) => {
        const item = await create.run(fastify.db, request.params.postId, request.user.id, request.body)
        return created(reply, `/v1/posts/${item.post_id}/${plural}/${item.id}`, item)
      }
    )

    await moreWrites?.(fastify, opts)
  }

  return async fastify => {
    fastify.get(
      '/posts/:postId/' + plural,
      {
        onRequest: fastify.authenticateIfToken,
        schema: {
          tags,
          operationId: list.operationId,
          security: optionalSecurity,
          summary: list.summary,
          params: PostParams,
          querystring: list.querystring,
          response: { 200: ref(list.response), ...errorResponses('ValidationFailed', 'PostNotFound', 'InvalidCredentials', 'UserIsBanned') }
        }
      },
      async (request, reply) => {
        const query = request.query as Static<Query> & Page // a ListQuery: limit and offset have defaults
        const { items, total } = await list.run(fastify.db, request.params.postId, callerId(request), query)
        return listReply(request, reply, plural, items, total, query)
      }
    )

    fastify.get(
      `/posts/:postId/${plural}/:${idParam}`,
      {
        onRequest: fastify.authenticateIfToken,
        config: { etag: true },
        schema: {
          tags,
          operationId: get.operationId,
          security: optionalSecurity,
          summary: get.summary,
          params: get.params,
          response: {
            200: ref(get.response),
            304: NotModified,
            ...errorResponses('ValidationFailed', 'PostNotFound', 'ResourceNotFound', 'InvalidCredentials', 'UserIsBanned')
          }
        }
      },
      async request => {
        const params = request.params as Record<string, string>
        return get.run(fastify.db, params.postId, params[idParam], callerId(request))
      }
    )

    await fastify.register(writes)
  }
}
