import type { FastifyPluginAsync } from 'fastify'

/** The /v1 route groups, each an encapsulated plugin with its own prefix. */
const v1: FastifyPluginAsync = async (fastify) => {
  void fastify
}

export default v1
