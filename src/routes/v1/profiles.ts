import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { assertIfMatch } from '../../../plugins/etag.js'
import { IdempotencyHeaders, IfMatchHeaders, NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { MyProfile, Profile, ProfileCreate, ProfileParams, ProfileUpdate } from '../../../schemas/profiles.js'
import { getMyProfile, getProfile, signUp, updateMe } from '../../domain/users.js'
import { created } from '../replies.js'

const tags = ['profiles']

/** Sign-up and the public profiles; /profiles/me (authenticated) is registered first, below. */
const profiles: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/profiles', {
    config: { idempotent: true },
    schema: {
      tags,
      operationId: 'createProfile', description: 'Anyone: signs up, creating a user and its profile (the profile id is the user id), and queues one e-mail with a link that verifies the address (`email_verified` is false until then). The username is trimmed and lower-cased; a taken username or e-mail is 409. New accounts are not creators: an operator grants that.',
      summary: 'Sign up: create a user and its profile',
      headers: IdempotencyHeaders,
      body: ref(ProfileCreate),
      response: { 201: ref(MyProfile), ...errorResponses('ValidationFailed', 'InvalidUserData', 'Conflict') }
    }
  }, async (request, reply) => {
    const profile = await signUp(fastify.db, request.body, fastify.emailVerification)
    return created(reply, `/v1/profiles/${profile.id}`, profile)
  })

  // A static route: find-my-way tries it before /profiles/:profileId, so `me` is never an id.
  await fastify.register(me)

  fastify.get('/profiles/:profileId', {
    config: { etag: true },
    schema: {
      tags,
      operationId: 'getProfile', description: 'Anyone: a public profile, never with e-mail or password data. Changes nothing.',
      summary: 'A public profile',
      params: ProfileParams,
      response: { 200: ref(Profile), 304: NotModified, ...errorResponses('ValidationFailed', 'ProfileNotFound') }
    }
  }, async (request) => getProfile(fastify.db, request.params.profileId))
}

const me: FastifyPluginAsyncTypebox = async (fastify) => {
  const security = [{ bearerAuth: [] }]
  const errors = errorResponses('NotAuthenticated', 'InvalidCredentials', 'UserIsBanned')
  fastify.addHook('onRequest', fastify.authenticate)

  fastify.get('/profiles/me', {
    config: { etag: true },
    schema: {
      tags,
      security,
      operationId: 'getMyProfile', description: 'Signed-in users: the caller\'s own profile, with the e-mail address and whether it is verified. Changes nothing.',
      summary: 'The caller\'s own profile, with the e-mail address',
      response: { 200: ref(MyProfile), 304: NotModified, ...errors }
    }
  }, async (request) => getMyProfile(fastify.db, request.user.id))

  fastify.put('/profiles/me', {
    config: { etag: true },
    schema: {
      tags,
      security,
      operationId: 'updateMyProfile', description: 'Signed-in users: replaces the writable fields of the caller\'s own profile (an absent field becomes null); username, e-mail and password do not change here. A stale If-Match is 412.',
      summary: 'Replace the writable fields of the caller\'s profile',
      headers: IfMatchHeaders,
      body: ref(ProfileUpdate),
      response: { 200: ref(MyProfile), ...errorResponses('NotAuthenticated', 'InvalidCredentials', 'UserIsBanned', 'ValidationFailed', 'PreconditionFailed') }
    }
  }, async (request, reply) => updateMe(fastify.db, request.user.id, request.body, current => assertIfMatch(request, reply, current)))
}

export default profiles
