import { Type, type Static } from './typebox.js'
import { Params, Uuid } from './common.js'

/** POST /users/{userId}/email and /verification-emails: the user is the caller (self only). */
export const UserParams = Params({ userId: Uuid })
export type UserParams = Static<typeof UserParams>

/** POST /email-verifications: the token from the link Roja mailed (its `token` query parameter). */
export const EmailVerification = Type.Object({
  token: Type.String({
    minLength: 1,
    maxLength: 512,
    pattern: '^[A-Za-z0-9_-]+$',
    description: 'the `token` query parameter of the verification link, as it is',
    writeOnly: true
  })
}, { $id: 'EmailVerification', title: 'EmailVerification', additionalProperties: false })
export type EmailVerification = Static<typeof EmailVerification>
