import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { Profile, ProfileParams } from '../../../schemas/profiles.js'
import { getCreator } from '../../domain/users.js'

/** GET /creators/{profileId}: a profile that belongs to a creator (public). */
const creators: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/creators/:profileId', {
    config: { etag: true },
    schema: {
      tags: ['creators'],
      operationId: 'getCreator',
      summary: 'A creator\'s public profile',
      params: ProfileParams,
      response: { 200: ref(Profile), 304: NotModified, ...errorResponses('ValidationFailed', 'ProfileNotFound', 'ProfileNotCreator') }
    }
  }, async (request) => getCreator(fastify.db, request.params.profileId))
}

export default creators
