import { Type, type Static } from './typebox.js'

// Lenient on purpose: a wrong username must fail like a wrong password (401), not as 422.
const Username = Type.String({ minLength: 1, maxLength: 256, examples: ['ada_lovelace'] })
const Password = Type.String({ minLength: 1, maxLength: 1024, writeOnly: true })

/** POST /v1/auth/token as JSON. */
export const TokenRequest = Type.Object({
  username: Username,
  password: Password
}, { $id: 'TokenRequest', title: 'TokenRequest', additionalProperties: false })
export type TokenRequest = Static<typeof TokenRequest>

/** POST /v1/auth/token as the RFC 6749 §4.3 form (resource owner password credentials). */
export const TokenForm = Type.Object({
  grant_type: Type.Literal('password'),
  username: Username,
  password: Password,
  scope: Type.Optional(Type.String({ maxLength: 256, description: 'accepted and ignored: Roja has no scopes' }))
}, { $id: 'TokenForm', title: 'TokenForm', additionalProperties: false })
export type TokenForm = Static<typeof TokenForm>

export const TokenResponse = Type.Object({
  access_token: Type.String({ description: 'an HS256 JWT; send it as `Authorization: Bearer <token>`' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ minimum: 1, description: 'seconds until the token expires' })
}, { $id: 'TokenResponse', title: 'TokenResponse', additionalProperties: false })
export type TokenResponse = Static<typeof TokenResponse>
