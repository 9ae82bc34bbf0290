import type { FastifyPluginAsync } from 'fastify'
import posts from './posts.js'

/** The /v2 route groups: only the routes that changed since v1. */
const v2: FastifyPluginAsync = async (fastify) => {
  await fastify.register(posts)
}

export default v2
