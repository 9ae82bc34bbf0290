import { Type, type Static } from './typebox.js'

/**
 * The account routes (DESIGN.md §7): the secret-bearing steps take the current password; new
 * passwords follow the sign-up rule (at least 12 characters).
 */

// Lenient: a wrong current password must be a 403 WrongPassword, not a 422 about its shape.
const CurrentPassword = Type.String({ minLength: 1, maxLength: 1024, description: 'the account\'s password as it is now', writeOnly: true })
const NewPassword = Type.String({
  minLength: 12, maxLength: 1024, description: 'at least 12 characters, as at sign-up; never returned', writeOnly: true
})
const Email = Type.String({
  format: 'email', maxLength: 254, description: 'compared and stored lower-cased', examples: ['ada@example.com']
})
const ResetToken = Type.String({
  minLength: 1,
  maxLength: 512,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'the `token` query parameter of the reset link, as it is',
  writeOnly: true
})

/** PUT /profiles/me/password. */
export const PasswordChange = Type.Object({
  current_password: CurrentPassword,
  new_password: NewPassword
}, { $id: 'PasswordChange', title: 'PasswordChange', additionalProperties: false })
export type PasswordChange = Static<typeof PasswordChange>

/** POST /password-resets: the account by its address, or by its username. */
export const PasswordResetRequest = Type.Union([
  Type.Object({ email: Email }, { additionalProperties: false }),
  Type.Object({
    username: Type.String({
      minLength: 1, maxLength: 256, description: 'trimmed and lower-cased, as at sign-in', examples: ['ada_lovelace']
    })
  }, { additionalProperties: false })
], { $id: 'PasswordResetRequest', title: 'PasswordResetRequest', description: 'exactly one of `email` or `username`' })
export type PasswordResetRequest = Static<typeof PasswordResetRequest>

/** POST /password-resets/confirmations: the token from the mailed link and the new password. */
export const PasswordResetConfirmation = Type.Object({
  token: ResetToken,
  new_password: NewPassword
}, { $id: 'PasswordResetConfirmation', title: 'PasswordResetConfirmation', additionalProperties: false })
export type PasswordResetConfirmation = Static<typeof PasswordResetConfirmation>

/** POST /profiles/me/email-changes. */
export const EmailChange = Type.Object({
  current_password: CurrentPassword,
  email: Email
}, { $id: 'EmailChange', title: 'EmailChange', additionalProperties: false })
export type EmailChange = Static<typeof EmailChange>

/** DELETE /profiles/me: the body that confirms the deletion. */
export const AccountDeletion = Type.Object({
  current_password: CurrentPassword
}, { $id: 'AccountDeletion', title: 'AccountDeletion', additionalProperties: false })
export type AccountDeletion = Static<typeof AccountDeletion>
