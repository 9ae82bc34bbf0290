import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../schemas/typebox.js'
import { AppError } from '../../schemas/problems.js'
import { confirmEmail } from '../domain/email-verification.js'
import { escapeHtml, page } from './html-page.js'

const FORM = 'application/x-www-form-urlencoded'
const Token = Type.String({ minLength: 1, maxLength: 512 })

/**
 * The page a mailed verification link opens when no front end of its own is configured
 * (EMAIL_VERIFY_URL unset). Opening the link only shows a form; the person's click posts the token,
 * so a mail scanner that fetches links verifies nothing. No JavaScript; the token leaves the URL once.
 */
const verifyEmailPage: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: 4096 }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })

  fastify.get('/verify-email', {
    // the link's own token is expected here; every other token name in a query is still refused
    config: { linkToken: true },
    schema: { hide: true, querystring: Type.Object({ token: Type.Optional(Token) }, { additionalProperties: false }) }
  }, async (request, reply) => {
    const { token } = request.query
    if (token === undefined) return page(reply, 400, 'This link is incomplete', '<p>Open the whole link from the e-mail, or sign in and ask for a new one.</p>')
    return page(reply, 200, 'Confirm your e-mail address', `<form method="post" action="verify-email">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<p>Press the button to confirm that this address is yours.</p>
<button type="submit">Confirm my address</button>
</form>`)
  })

  fastify.post('/verify-email', {
    config: { contentTypes: [FORM] },
    schema: { hide: true, body: Type.Object({ token: Token }, { additionalProperties: false }) }
  }, async (request, reply) => {
    try {
      await confirmEmail(fastify.db, fastify.emailVerification, request.body.token)
    } catch (err) {
      if (err instanceof AppError && err.code === 'InvalidVerificationToken') return page(reply, 422, 'This link does not work', `<p>${escapeHtml(err.message)}</p>`)
      throw err
    }
    return page(reply, 200, 'Your e-mail address is confirmed', '<p>You can close this page.</p>')
  })
}

export default verifyEmailPage
