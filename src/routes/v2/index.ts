import type { FastifyPluginAsync } from 'fastify'

/** The /v2 route groups: only the routes that changed since v1 (DESIGN §6). */
const v2: FastifyPluginAsync = async (fastify) => {
  void fastify
}

export default v2
