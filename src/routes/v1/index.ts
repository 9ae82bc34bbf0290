import type { FastifyPluginAsync } from 'fastify'
import auth from './auth.js'
import creators from './creators.js'
import profiles from './profiles.js'

/** The /v1 route groups, each an encapsulated plugin with its own prefix. */
const v1: FastifyPluginAsync = async (fastify) => {
  void fastify
  await fastify.register(auth)
  await fastify.register(profiles)
  await fastify.register(creators)
}

export default v1
