import type { Static } from '@sinclair/typebox'
import { Params, Uuid } from './common.js'

/** POST /users/{userId}/email: the user is the caller (self only). */
export const UserParams = Params({ userId: Uuid })
export type UserParams = Static<typeof UserParams>
