import type { FastifyPluginAsync } from 'fastify'
import account from './account.js'
import alerts from './alerts.js'
import auth from './auth.js'
import classes from './classes.js'
import comments from './comments.js'
import courses from './courses.js'
import creatorPosts from './creator-posts.js'
import creators from './creators.js'
import emailVerifications from './email-verifications.js'
import media from './media.js'
import posts from './posts.js'
import profiles from './profiles.js'
import reviews from './reviews.js'
import shops from './shops.js'
import userEmail from './user-email.js'
import users from './users.js'

/** The /v1 route groups, each an encapsulated plugin with its own prefix. */
const v1: FastifyPluginAsync = async (fastify) => {
  // people and access
  await fastify.register(auth)
  await fastify.register(profiles)
  await fastify.register(creators)
  await fastify.register(users)
  await fastify.register(userEmail)
  await fastify.register(emailVerifications)
  await fastify.register(account)
  // posts and their conversation
  await fastify.register(posts)
  await fastify.register(creatorPosts)
  await fastify.register(reviews)
  await fastify.register(comments)
  await fastify.register(alerts)
  // media and the other collections
  await fastify.register(media)
  await fastify.register(shops)
  await fastify.register(classes)
  await fastify.register(courses)
}

export default v1
