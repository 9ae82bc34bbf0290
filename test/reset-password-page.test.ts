import t from 'tap'
import { build, json } from './helper.js'
import { linkIn, newMail, signIn, signUpVerified, tokenStatus } from './account-fixtures.js'
import { RESET_SUBJECT } from '../src/domain/password-reset.js'

/**
 * With the defaults (no SMTP_URL, no PASSWORD_RESET_URL) a person resets a forgotten password by
 * opening the link in the .eml file Roja writes and filling in the plain form it opens.
 */

const NEW_PASSWORD = 'a much longer new passphrase'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

function hiddenToken (html: string): string {
  const value = /<input type="hidden" name="token" value="([^"]*)">/.exec(html)?.[1]
  if (value === undefined) throw new Error(`no token field in:\n${html}`)
  return value.replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c)))
}

t.test('the link opens a form; filling it in sets the password and signs out everywhere', async t => {
  const logs: string[] = []
  const app = await build(t, { logs })
  const ada = await signUpVerified(app, 'ada')
  await app.inject({ method: 'POST', url: '/v1/password-resets', payload: { email: 'ada@example.com' } })
  const mail = (await newMail(app)).find(m => m.subject === RESET_SUBJECT)!
  const link = linkIn(mail)
  t.equal(link.pathname, '/reset-password')
  const token = link.searchParams.get('token')!

  const opened = await app.inject({ method: 'GET', url: `${link.pathname}${link.search}` })
  t.equal(opened.statusCode, 200)
  t.match(opened.headers['content-type'], /^text\/html; charset=utf-8/)
  t.equal(opened.headers['cache-control'], 'no-store')
  t.match(opened.headers['content-security-policy'], /default-src 'none'; form-action 'self'/)
  t.notMatch(opened.body, /<script/i, 'works without JavaScript')
  t.match(opened.body, /<form method="post" action="reset-password">/, 'the form posts back to the page, the token not in its URL')
  t.equal(opened.body.split(token).length - 1, 1, 'the token is in the page once')
  t.match(opened.body, /type="password" id="new_password" name="new_password" autocomplete="new-password"/)
  t.equal(await tokenStatus(app, ada.headers), 200, 'opening the link changes nothing')

  const post = (fields: Record<string, string>) =>
    app.inject({ method: 'POST', url: '/reset-password', headers: FORM, payload: new URLSearchParams(fields).toString() })
  const short = await post({ token: hiddenToken(opened.body), new_password: 'short', new_password_again: 'short' })
  t.equal(short.statusCode, 422)
  t.match(short.body, /at least 12 characters/)
  const differ = await post({ token: hiddenToken(short.body), new_password: NEW_PASSWORD, new_password_again: `${NEW_PASSWORD}!` })
  t.equal(differ.statusCode, 422)
  t.match(differ.body, /differ/)

  const done = await post({ token: hiddenToken(differ.body), new_password: NEW_PASSWORD, new_password_again: NEW_PASSWORD })
  t.equal(done.statusCode, 200)
  t.match(done.body, /Your new password is set/)
  t.equal(await tokenStatus(app, ada.headers), 401, 'every token ended')
  t.ok(await signIn(app, 'ada', NEW_PASSWORD))

  const again = await post({ token, new_password: 'yet another long passphrase', new_password_again: 'yet another long passphrase' })
  t.equal(again.statusCode, 422, 'the link works once')
  t.match(again.body, /This link does not work/)
  t.notOk(again.body.includes(token), 'the error page does not echo the token')

  t.same(
    logs.filter(l => l.includes(token)),
    [],
    'no log line holds the token'
  )
  t.same(
    logs.filter(l => l.includes(NEW_PASSWORD)),
    [],
    'nor the password'
  )
  t.ok(
    logs.some(l => l.includes('/reset-password?token=[redacted]')),
    'the request line shows the link redacted'
  )
})

t.test('an incomplete or marked-up link gets a readable page; JSON and other token names are refused', async t => {
  const app = await build(t)
  const incomplete = await app.inject({ method: 'GET', url: '/reset-password' })
  t.equal(incomplete.statusCode, 400)
  t.match(incomplete.body, /This link is incomplete/)
  const markup = await app.inject({ method: 'GET', url: `/reset-password?token=${encodeURIComponent('"><script>x</script>')}` })
  t.notMatch(markup.body, /<script>/, 'the token is escaped into the form')
  const asJson = await app.inject({
    method: 'POST',
    url: '/reset-password',
    headers: { 'content-type': 'application/json' },
    payload: '{"token":"x"}'
  })
  t.equal(asJson.statusCode, 415)
  t.equal((await app.inject({ method: 'GET', url: '/reset-password?access_token=abc' })).statusCode, 422, "only `token` in the page's query")
  const elsewhere = await app.inject({ method: 'GET', url: '/v1/posts?token=abc' })
  t.equal(json(elsewhere).code, 'TokenInQuery', 'a token in the query of an API route is still refused')
})

t.test("PASSWORD_RESET_URL points the link at a front end's page, which completes through the API", async t => {
  const app = await build(t, { env: { PASSWORD_RESET_URL: 'https://app.example/account/reset?from=mail' } })
  await signUpVerified(app, 'ada')
  await app.inject({ method: 'POST', url: '/v1/password-resets', payload: { username: 'ada' } })
  const link = linkIn((await newMail(app)).find(m => m.subject === RESET_SUBJECT)!)
  t.equal(`${link.origin}${link.pathname}`, 'https://app.example/account/reset')
  t.equal(link.searchParams.get('from'), 'mail', "the URL's own query is kept")
  const res = await app.inject({
    method: 'POST',
    url: '/v1/password-resets/confirmations',
    payload: { token: link.searchParams.get('token'), new_password: NEW_PASSWORD }
  })
  t.equal(res.statusCode, 204)
})
