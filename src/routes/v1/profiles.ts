import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { assertIfMatch } from '../../../plugins/etag.js'
import { IdempotencyHeaders, NotModified, ref } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/problems.js'
import { MyProfile, Profile, ProfileCreate, ProfileParams, ProfilePatch, ProfileUpdate } from '../../../schemas/profiles.js'
import { getMyProfile, getProfile, profileFields, signUp, updateMe } from '../../domain/users.js'
import { created } from '../replies.js'
import { registerUpdates } from '../updates.js'
import { authErrors, publicBodyLimit } from '../guards.js'

const tags = ['profiles']

/** Sign-up and the public profiles; /profiles/me (authenticated) is registered first, below. */
const profiles: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/profiles', {
    bodyLimit: publicBodyLimit(fastify.config),
    config: { idempotent: true },
    schema: {
      tags,
      operationId: 'createProfile',
      summary: 'Sign up: create a user and its profile',
      headers: IdempotencyHeaders,
      body: ref(ProfileCreate),
      response: { 201: ref(MyProfile), ...errorResponses('ValidationFailed', 'InvalidUserData', 'Conflict') }
    }
  }, async (request, reply) => {
    const profile = await signUp(fastify.db, request.body, fastify.emailVerification, fastify.config.PASSWORD_HASH_COST)
    return created(reply, `/v1/profiles/${profile.id}`, profile)
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
  const errors = errorResponses(...authErrors)
  fastify.addHook('onRequest', fastify.authenticate)

  fastify.get('/profiles/me', {
    config: { etag: true },
    schema: {
      tags,
      security,
      operationId: 'getMyProfile',
      summary: 'The caller\'s own profile, with the e-mail address',
      response: { 200: ref(MyProfile), 304: NotModified, ...errors }
    }
  }, async (request) => getMyProfile(fastify.db, request.user.id))

  registerUpdates(fastify, {
    url: '/profiles/me',
    tags,
    body: ProfileUpdate,
    patchBody: ProfilePatch,
    response: MyProfile,
    errors: [...authErrors, 'ValidationFailed', 'PreconditionFailed'],
    put: {
      operationId: 'updateMyProfile',
      summary: 'Replace the writable fields of the caller\'s profile'
    },
    patch: {
      operationId: 'patchMyProfile',
      summary: 'Change some fields of the caller\'s profile, a JSON Merge Patch'
    },
    fieldsOf: profileFields,
    run: (request, reply, change) => updateMe(fastify.db, request.user.id, change, current => assertIfMatch(request, reply, current))
  })
}

export default profiles
