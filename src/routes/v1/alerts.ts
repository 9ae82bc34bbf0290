import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Alert, AlertList, AlertListQuery, AlertParams } from '../../../schemas/alerts.js'
import { NotModified, QueuedStatus, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { authErrors, security } from '../guards.js'
import { getAlert, listAlerts, resendAlert } from '../../domain/alerts.js'
import { listReply } from '../replies.js'

const AUTHENTICATED = errorResponses(...authErrors, 'ValidationFailed')
const alertOwner = { of: ({ ownerId }: { ownerId: string }) => ownerId }

/** The caller's alerts: read them, and have one e-mailed again. Own alerts only. */
const alerts: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addHook('onRequest', fastify.authenticate)

  fastify.get('/alerts', {
    schema: {
      tags: ['alerts'],
      operationId: 'listAlerts',
      summary: 'Your alerts',
      security,
      querystring: AlertListQuery,
      response: { 200: ref(AlertList), ...AUTHENTICATED }
    }
  }, async (request, reply) => {
    const { limit, offset } = request.query
    const { items, total } = await listAlerts(fastify.db, request.user.id, request.query, { limit, offset })
    return listReply(request, reply, 'alerts', items, total, { limit, offset })
  })

  fastify.get('/alerts/:alertId', {
    config: { etag: true, owner: alertOwner },
    schema: {
      tags: ['alerts'],
      operationId: 'getAlert',
      summary: 'One of your alerts',
      security,
      params: AlertParams,
      response: { 200: ref(Alert), 304: NotModified, ...errorResponses(...authErrors, 'UserNotOwner', 'AlertNotFound', 'ValidationFailed') }
    }
  }, async (request) => request.owned(await getAlert(fastify.db, request.params.alertId)).alert)

  fastify.post('/alerts/:alertId/resend', {
    config: { owner: alertOwner },
    preHandler: fastify.mailRateLimit,
    schema: {
      tags: ['alerts'],
      operationId: 'resendAlert',
      summary: 'E-mail one of your alerts again',
      security,
      params: AlertParams,
      response: { 202: ref(QueuedStatus), ...errorResponses(...authErrors, 'UserNotOwner', 'EmailNotVerified', 'AlertNotFound', 'ValidationFailed') }
    }
  }, async (request, reply) => {
    request.owned(await getAlert(fastify.db, request.params.alertId))
    await resendAlert(fastify.db, request.params.alertId)
    return reply.code(202).send({ status: 'queued' as const })
  })
}

export default alerts
