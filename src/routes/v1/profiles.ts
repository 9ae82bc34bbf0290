import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { activeAccount } from '../../../plugins/auth.js'
import { assertIfMatch } from '../../../plugins/etag.js'
import { IfMatchHeaders, NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { MyProfile, Profile, ProfileCreate, ProfileParams, ProfileUpdate } from '../../../schemas/profiles.js'
import { findMyProfile, getProfile, signUp, updateMe } from '../../domain/users.js'

const tags = ['profiles']

/** Sign-up and the public profiles; /profiles/me (authenticated) is registered first, below. */
const profiles: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/profiles', {
    config: { idempotent: true },
    schema: {
      tags,
      operationId: 'createProfile',
      summary: 'Sign up: create a user and its profile',
      body: ref(ProfileCreate),
      response: { 201: ref(MyProfile), ...errorResponses('ValidationFailed', 'InvalidUserData', 'Conflict') }
    }
  }, async (request, reply) => {
    const profile = await signUp(fastify.db, request.body)
    return reply.code(201).header('location', `/v1/profiles/${profile.id}`).send(profile)
  })

  // A static route: find-my-way tries it before /profiles/:profileId, so `me` is never an id.
  await fastify.register(me)

  fastify.get('/profiles/:profileId', {
    config: { etag: true },
    schema: {
      tags,
      operationId: 'getProfile',
      summary: 'A public profile',
      params: ProfileParams,
      response: { 200: ref(Profile), 304: NotModified, ...errorResponses('ValidationFailed', 'ProfileNotFound') }
    }
  }, async (request) => getProfile(fastify.db, request.params.profileId))
}

const me: FastifyPluginAsyncTypebox = async (fastify) => {
  const security = [{ bearerAuth: [] }]
  const errors = errorResponses('NotAuthenticated', 'InvalidCredentials', 'UserIsBanned')

  fastify.get('/profiles/me', {
    config: { etag: true },
    schema: {
      tags,
      security,
      operationId: 'getMyProfile',
      summary: 'The caller\'s own profile, with the e-mail address',
      response: { 200: ref(MyProfile), 304: NotModified, ...errors }
    }
  }, async (request) => {
    // The busiest authenticated read in one query: the profile row carries the account state
    // that authenticate would read, checked by the same rule (activeAccount).
    const { id, gen } = fastify.tokenClaims(request)
    const { is_active: _, token_generation: __, ...profile } = activeAccount(await findMyProfile(fastify.db, id), gen)
    return profile
  })

  fastify.put('/profiles/me', {
    onRequest: fastify.authenticate,
    config: { etag: true },
    schema: {
      tags,
      security,
      operationId: 'updateMyProfile',
      summary: 'Replace the writable fields of the caller\'s profile',
      headers: IfMatchHeaders,
      body: ref(ProfileUpdate),
      response: { 200: ref(MyProfile), ...errorResponses('NotAuthenticated', 'InvalidCredentials', 'UserIsBanned', 'ValidationFailed', 'PreconditionFailed') }
    }
  }, async (request) => updateMe(fastify.db, request.user.id, request.body, current => assertIfMatch(request, current)))
}

export default profiles
