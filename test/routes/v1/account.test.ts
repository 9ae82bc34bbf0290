import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { PASSWORD } from '../../fixtures.js'
import { build, json } from '../../helper.js'
import { linkIn, newMail, signIn, signUpVerified, tokenIn, tokenStatus } from '../../account-fixtures.js'
import { EMAIL_CHANGE_NOTICE_SUBJECT, EMAIL_CHANGE_SUBJECT, PASSWORD_CHANGED_SUBJECT } from '../../../src/domain/account.js'

/**
 * The caller's own account (DESIGN.md §7): changing the password, the address, and signing out
 * everywhere, driven over HTTP with the mail read from the .eml files Roja writes.
 */

const NEW_PASSWORD = 'a much longer new passphrase'
const changePassword = (app: FastifyInstance, headers: Record<string, string>, current: string, next: string, remoteAddress?: string) =>
  app.inject({ method: 'PUT', url: '/v1/profiles/me/password', headers, payload: { current_password: current, new_password: next }, remoteAddress })
const changeEmail = (app: FastifyInstance, headers: Record<string, string>, email: string, current = PASSWORD) =>
  app.inject({ method: 'POST', url: '/v1/profiles/me/email-changes', headers, payload: { current_password: current, email } })

t.test('a password change ends every other token, answers a fresh one, and mails a notice', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  const laptop = await signIn(app, 'ada')

  const res = await changePassword(app, ada.headers, PASSWORD, NEW_PASSWORD)
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  const fresh = { authorization: `Bearer ${json(res).access_token as string}` }
  t.equal(json(res).token_type, 'Bearer')

  t.equal(await tokenStatus(app, laptop), 401, "the lost laptop's token ended")
  t.equal(await tokenStatus(app, ada.headers), 401, 'the token the change was made with ended too')
  t.equal(await tokenStatus(app, fresh), 200, 'the fresh token works')

  t.equal(
    (await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'ada', password: PASSWORD } })).statusCode,
    401,
    'the old password fails'
  )
  t.ok(await signIn(app, 'ada', NEW_PASSWORD), 'the new password signs in')

  const mails = await newMail(app)
  t.same(
    mails.map(m => [m.to, m.subject]),
    [['ada@example.com', PASSWORD_CHANGED_SUBJECT]],
    'one notice to the address'
  )
  t.notMatch(mails[0].text, /token=|https?:\/\//, 'the notice holds no link and no secret')
})

t.test('a wrong current password changes nothing: 403 WrongPassword, tokens alive, no mail', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  await newMail(app)
  const res = await changePassword(app, ada.headers, 'not the password at all', NEW_PASSWORD)
  t.equal(res.statusCode, 403)
  t.equal(json(res).code, 'WrongPassword')
  t.equal(json(res).errors[0].field, '/current_password')
  t.equal(await tokenStatus(app, ada.headers), 200)
  t.ok(await signIn(app, 'ada'), 'the password is unchanged')
  t.same(await newMail(app), [])

  const short = await changePassword(app, ada.headers, PASSWORD, 'too short')
  t.equal(short.statusCode, 422, 'the sign-up rule holds: at least 12 characters')
  t.equal((await changePassword(app, {}, PASSWORD, NEW_PASSWORD)).statusCode, 401, 'no token: 401')
})

t.test('wrong current passwords count toward the sign-in limit per client and username', async t => {
  const app = await build(t, { env: { AUTH_RATE_LIMIT_MAX: '3' } })
  const ada = await signUpVerified(app, 'ada')
  const statuses: number[] = []
  for (let n = 0; n < 5; n++) statuses.push((await changePassword(app, ada.headers, `wrong guess number ${n}`, NEW_PASSWORD, '10.9.0.1')).statusCode)
  t.same(statuses, [403, 403, 403, 429, 429], 'three guesses, then 429')
  t.equal((await changePassword(app, ada.headers, PASSWORD, NEW_PASSWORD, '10.9.0.1')).statusCode, 429, 'even the right password waits')
  t.equal(await tokenStatus(app, ada.headers), 200, 'nothing changed')
  const login = await app.inject({
    method: 'POST',
    url: '/v1/auth/token',
    payload: { username: 'ada', password: PASSWORD },
    remoteAddress: '10.9.0.1'
  })
  t.equal(login.statusCode, 429, 'the guesses used up the sign-in limit of that client and username too')
  const elsewhere = await app.inject({
    method: 'POST',
    url: '/v1/auth/token',
    payload: { username: 'ada', password: PASSWORD },
    remoteAddress: '10.9.0.2'
  })
  t.equal(elsewhere.statusCode, 200, 'another client keeps its own')
})

t.test("failed sign-ins count toward the password change's limit too", async t => {
  const app = await build(t, { env: { AUTH_RATE_LIMIT_MAX: '2' } })
  const ada = await signUpVerified(app, 'ada', {})
  for (let n = 0; n < 2; n++) {
    await app.inject({
      method: 'POST',
      url: '/v1/auth/token',
      payload: { username: 'ADA', password: `wrong ${n} password` },
      remoteAddress: '10.9.1.1'
    })
  }
  t.equal((await changePassword(app, ada.headers, PASSWORD, NEW_PASSWORD, '10.9.1.1')).statusCode, 429)
  t.equal((await changePassword(app, ada.headers, PASSWORD, NEW_PASSWORD, '10.9.1.2')).statusCode, 200)
})

t.test('a password change racing a login leaves no live token from the old password', async t => {
  const app = await build(t)
  await signUpVerified(app, 'ada')
  const headers = await signIn(app, 'ada')
  const [login, change] = await Promise.all([
    app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'ada', password: PASSWORD } }),
    changePassword(app, headers, PASSWORD, NEW_PASSWORD)
  ])
  t.equal(change.statusCode, 200)
  if (login.statusCode === 200) {
    // the login read the old password before the change: its token is of the old generation
    t.equal(await tokenStatus(app, { authorization: `Bearer ${json(login).access_token as string}` }), 401, "the racing login's token is dead")
  } else {
    t.equal(login.statusCode, 401, 'the login came after the change: the old password fails')
  }
  t.equal(await tokenStatus(app, { authorization: `Bearer ${json(change).access_token as string}` }), 200)
})

t.test('DELETE /profiles/me/tokens ends every token of the account, and only of that account', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  const phone = await signIn(app, 'ada')
  const grace = await signUpVerified(app, 'grace')
  const res = await app.inject({ method: 'DELETE', url: '/v1/profiles/me/tokens', headers: ada.headers })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal(await tokenStatus(app, ada.headers), 401)
  t.equal(await tokenStatus(app, phone), 401)
  t.equal(await tokenStatus(app, grace.headers), 200, 'another account keeps its tokens')
  t.equal(await tokenStatus(app, await signIn(app, 'ada')), 200, 'signing in again works')
  t.equal(
    (await app.inject({ method: 'DELETE', url: '/v1/profiles/me/tokens', headers: ada.headers })).statusCode,
    401,
    'the ended token cannot do it again'
  )
})

t.test('an address change takes effect only through the link mailed to the new address', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  const res = await changeEmail(app, ada.headers, 'Ada@Lovelace.example')
  t.equal(res.statusCode, 202)
  t.same(json(res), { status: 'queued' })

  const mails = await newMail(app)
  t.same(
    mails.map(m => [m.to, m.subject]).sort(),
    [
      ['ada@example.com', EMAIL_CHANGE_NOTICE_SUBJECT],
      ['ada@lovelace.example', EMAIL_CHANGE_SUBJECT]
    ].sort()
  )
  const notice = mails.find(m => m.to === 'ada@example.com')!
  t.notMatch(notice.text, /token=|https?:\/\/|lovelace\.example/, 'the old address gets a notice with no link, no secret, not the new address')
  const me = json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: ada.headers }))
  t.equal(me.email, 'ada@example.com', 'nothing changes before the link is confirmed')

  const link = linkIn(mails.find(m => m.to === 'ada@lovelace.example')!)
  t.equal(link.pathname, '/verify-email', 'the link opens the verification page')
  const confirmed = await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: link.searchParams.get('token') } })
  t.equal(confirmed.statusCode, 204)
  const after = json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: ada.headers }))
  t.same([after.email, after.email_verified], ['ada@lovelace.example', true])
  t.equal(
    (await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: link.searchParams.get('token') } })).statusCode,
    204,
    'confirming again changes nothing'
  )

  const reset = await app.inject({ method: 'POST', url: '/v1/password-resets', payload: { email: 'ada@example.com' } })
  t.equal(reset.statusCode, 202)
  t.same(await newMail(app), [], "the old address is no account's any more")
})

t.test('an address that is taken: the same 202, no mail to it, and nothing changes', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  await signUpVerified(app, 'grace')
  await newMail(app)
  const res = await changeEmail(app, ada.headers, 'grace@example.com')
  t.equal(res.statusCode, 202, 'the answer does not tell whose the address is')
  const mails = await newMail(app)
  t.same(
    mails.map(m => m.to),
    ['ada@example.com'],
    "only the notice to the caller's own address"
  )
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: ada.headers })).email, 'ada@example.com')
})

t.test('an address change: wrong password 403, same address 422, a newer request voids the older link', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  await newMail(app)
  const wrong = await changeEmail(app, ada.headers, 'new@example.com', 'not the password at all')
  t.equal(wrong.statusCode, 403)
  t.equal(json(wrong).code, 'WrongPassword')
  t.same(await newMail(app), [], 'no mail for a wrong password')
  t.equal((await changeEmail(app, ada.headers, 'ADA@example.com')).statusCode, 422, 'the address it has already')

  await changeEmail(app, ada.headers, 'first@example.com')
  const first = tokenIn((await newMail(app)).find(m => m.to === 'first@example.com')!)
  await changeEmail(app, ada.headers, 'second@example.com')
  const second = tokenIn((await newMail(app)).find(m => m.to === 'second@example.com')!)
  const old = await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: first } })
  t.equal(old.statusCode, 422, 'the earlier link died')
  t.equal((await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: second } })).statusCode, 204)
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: ada.headers })).email, 'second@example.com')
})

t.test('an address taken between the request and the link: the link is refused, nothing half-done', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  await changeEmail(app, ada.headers, 'wanted@example.com')
  const token = tokenIn((await newMail(app)).find(m => m.to === 'wanted@example.com')!)
  await signUpVerified(app, 'wanted', { verify: false })
  const res = await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token } })
  t.equal(res.statusCode, 422)
  t.equal(json(res).code, 'InvalidVerificationToken')
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: ada.headers })).email, 'ada@example.com')
})
