import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ref } from '../../schemas/common.js'
import { Health, Version } from '../../schemas/operations.js'
import { API_VERSIONS } from '../../plugins/openapi.js'
import { PACKAGE_VERSION } from '../package-info.js'

/** /health and /version: unversioned, public, cheap. */
const operations: FastifyPluginAsyncTypebox = async (fastify) => {
  // On close (SIGTERM), /health fails for SHUTDOWN_DRAIN_MS while requests are still served, so a
  // balancer takes the instance out before its listener closes and no request meets a closed port.
  let draining = false
  fastify.addHook('preClose', async () => {
    draining = true
    await new Promise(resolve => setTimeout(resolve, fastify.config.SHUTDOWN_DRAIN_MS))
  })

  fastify.get('/health', {
    // /health reports an outage itself (503 + checks) rather than being shed
    config: { rateLimit: false, pressure: false },
    schema: {
      tags: ['operations'],
      operationId: 'getHealth',
      summary: 'Liveness and database check',
      response: { 200: ref(Health), 503: ref(Health) }
    }
  }, async (_request, reply) => {
    const ok = await fastify.dbHealthy()
    return reply.code(ok && !draining ? 200 : 503).send({
      status: ok && !draining ? 'ok' : 'unavailable',
      checks: { database: ok ? 'ok' : 'unavailable' }
    })
  })

  fastify.get('/version', {
    schema: {
      tags: ['operations'],
      operationId: 'getVersion',
      summary: 'Server and API versions',
      response: { 200: ref(Version) }
    }
  }, async () => ({
    version: PACKAGE_VERSION,
    api_versions: [...API_VERSIONS],
    commit: fastify.config.GIT_COMMIT ?? null
  }))
}

export default operations
