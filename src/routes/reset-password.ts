import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../schemas/typebox.js'
import { AppError } from '../../schemas/problems.js'
import { resetPassword, resetSettings } from '../domain/password-reset.js'
import { escapeHtml, page } from './html-page.js'

const FORM = 'application/x-www-form-urlencoded'
const Token = Type.String({ minLength: 1, maxLength: 512 })
// Lenient, so a short or mistyped password gets the form again with a sentence, not a JSON problem.
const Field = Type.String({ maxLength: 1024 })
const MIN_PASSWORD = 12
const LENGTHS = `minlength="${MIN_PASSWORD}" maxlength="1024"`

/**
 * The page a mailed password-reset link opens when no front end of its own is configured
 * (PASSWORD_RESET_URL unset): a plain form (no JavaScript) for the new password, twice. Opening the
 * link changes nothing; the token leaves the URL into the form once and travels in its body.
 */
const resetPasswordPage: FastifyPluginAsyncTypebox = async (fastify) => {
  const { config } = fastify
  const reset = resetSettings(config.jwtSecret, config.passwordResetUrl)
  fastify.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: 8192 }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })

  fastify.get('/reset-password', {
    // the link's own token is expected here; every other token name in a query is still refused
    config: { linkToken: true },
    schema: { hide: true, querystring: Type.Object({ token: Type.Optional(Token) }, { additionalProperties: false }) }
  }, async (request, reply) => {
    const { token } = request.query
    if (token === undefined) {
      return page(reply, 400, 'This link is incomplete', '<p>Open the whole link from the e-mail, or ask for a new one.</p>')
    }
    return page(reply, 200, 'Choose a new password', form(token))
  })

  fastify.post('/reset-password', {
    config: { contentTypes: [FORM] },
    schema: {
      hide: true,
      body: Type.Object({ token: Token, new_password: Field, new_password_again: Field }, { additionalProperties: false })
    }
  }, async (request, reply) => {
    const { token, new_password: password, new_password_again: again } = request.body
    const problem = password.length < MIN_PASSWORD
      ? `The password needs at least ${MIN_PASSWORD} characters.`
      : password !== again ? 'The two passwords differ: type the same one twice.' : undefined
    if (problem) return page(reply, 422, 'Choose a new password', form(token, problem))
    try {
      await resetPassword(fastify.db, reset, token, password, config.PASSWORD_HASH_COST)
    } catch (err) {
      if (err instanceof AppError && err.code === 'InvalidResetToken') {
        return page(reply, 422, 'This link does not work', `<p>${escapeHtml(err.message)}</p>`)
      }
      throw err
    }
    return page(reply, 200, 'Your new password is set',
      '<p>You were signed out everywhere: sign in again with the new password. You can close this page.</p>')
  })
}

function form (token: string, problem?: string): string {
  return `${problem ? `<p role="alert">${escapeHtml(problem)}</p>\n` : ''}<form method="post" action="reset-password">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<p><label for="new_password">New password (at least ${MIN_PASSWORD} characters)</label><br>
<input type="password" id="new_password" name="new_password" autocomplete="new-password" ${LENGTHS} required></p>
<p><label for="new_password_again">The new password again</label><br>
<input type="password" id="new_password_again" name="new_password_again" autocomplete="new-password" ${LENGTHS} required></p>
<button type="submit">Set the new password</button>
</form>`
}

export default resetPasswordPage
