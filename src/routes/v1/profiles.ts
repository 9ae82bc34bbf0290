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
      description: 'Anyone: signs up, creating a user and its profile (the profile id is the user id), and queues one e-mail with a ' +
        'link that verifies the address (`email_verified` is false until then). The username is trimmed and lower-cased; ' +
        'a taken username or e-mail is 409. New accounts are not creators: an operator grants that.',
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
      description: 'Anyone: a public profile, never with e-mail or password data. Changes nothing.',
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
      description: 'Signed-in users: the caller\'s own profile, with the e-mail address and whether it is verified. Changes nothing.',
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
      description: 'Signed-in users: replaces the writable fields of the caller\'s own profile (an absent field becomes null); ' +
        'username, e-mail and password do not change here. A stale If-Match is 412.',
      summary: 'Replace the writable fields of the caller\'s profile'
    },
    patch: {
      operationId: 'patchMyProfile',
      description: 'Signed-in users: merges a JSON Merge Patch (RFC 7396) into the writable fields of the caller\'s own profile: ' +
        'a member present replaces the field, null clears an optional one (on first_name it is 422), an absent member is kept; ' +
        'username, e-mail and password do not change here. The merged profile must pass the rules of PUT (422, an avatar_url on an ' +
        'allowed media host) or nothing changes. A stale If-Match is 412.',
      summary: 'Change some fields of the caller\'s profile, a JSON Merge Patch'
    },
    fieldsOf: profileFields,
    run: (request, reply, change) => updateMe(fastify.db, request.user.id, change, current => assertIfMatch(request, reply, current))
  })
}

export default profiles
