import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { createHmac } from 'node:crypto'
import { confirmEmail, issueVerificationToken, VERIFICATION_SUBJECT } from '../../../src/domain/email-verification.js'
import { createUser, PASSWORD, verificationToken, verifyEmail } from '../../fixtures.js'
import { build, json } from '../../helper.js'

/**
 * E-mail verification: sign-up mails one link with a random token; POST /v1/email-verifications
 * confirms it; POST /v1/users/{userId}/verification-emails sends a new one. The token is bound to
 * the user and the address, expires, cannot be guessed or moved to another account, and the
 * database keeps only its keyed hash.
 */

const confirm = (app: FastifyInstance, token: unknown) => app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token } })
const resend = (app: FastifyInstance, userId: string, headers: Record<string, string> = {}, remoteAddress?: string) =>
  app.inject({ method: 'POST', url: `/v1/users/${userId}/verification-emails`, headers, remoteAddress })
const verificationMail = (app: FastifyInstance, to: string) =>
  app.db
    .selectFrom('outbox_message')
    .selectAll()
    .where('to_address', '=', to)
    .where('subject', '=', VERIFICATION_SUBJECT)
    .orderBy('created_at')
    .execute()
const links = (app: FastifyInstance, userId: string) =>
  app.db.selectFrom('email_verification').selectAll().where('user_id', '=', userId).orderBy('created_at').execute()
const verifiedAt = async (app: FastifyInstance, id: string) =>
  (await app.db.selectFrom('user').select('email_verified_at').where('id', '=', id).executeTakeFirstOrThrow()).email_verified_at

async function signUp (app: FastifyInstance, username = 'ada', headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/profiles',
    headers,
    payload: { username, email: `${username}@Example.com`, password: PASSWORD, first_name: 'Ada' }
  })
  if (res.statusCode !== 201) throw new Error(`sign-up: ${res.statusCode} ${res.body}`)
  const token = json(await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username, password: PASSWORD } })).access_token
  return { ...json(res), headers: { authorization: `Bearer ${token as string}` } }
}

/** The expected rejection: 422 InvalidVerificationToken naming the rule, and the address still unverified. */
async function refused (t: Test, app: FastifyInstance, token: string, rule: 'invalid' | 'expired', what: string) {
  const res = await confirm(app, token)
  t.equal(res.statusCode, 422, `${what}: 422`)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.equal(json(res).code, 'InvalidVerificationToken', what)
  t.equal(json(res).errors?.[0]?.rule, rule, `${what}: rule ${rule}`)
  t.notOk(res.body.includes(token), `${what}: the answer does not echo the token`)
}

t.test('sign-up queues one verification e-mail with a random token; the profile says unverified', async t => {
  const app = await build(t, { env: { EMAIL_VERIFY_URL: 'https://app.example.com/verify?from=mail', EMAIL_VERIFY_TTL: '7200' } })
  const ada = await signUp(app)
  t.equal(ada.email_verified, false, 'the 201 says unverified')
  const mail = await verificationMail(app, 'ada@example.com')
  t.equal(mail.length, 1, 'one message, queued with the sign-up')
  t.equal(mail[0].subject, 'Confirm your e-mail address for Roja', 'a fixed subject')
  t.match(mail[0].body, /^Hello ada,/)
  t.match(mail[0].body, /The link works for 2 hours\./)
  const link = new URL(/https:\/\/\S+/.exec(mail[0].body)![0])
  t.equal(`${link.origin}${link.pathname}`, 'https://app.example.com/verify', 'the link opens EMAIL_VERIFY_URL')
  t.equal(link.searchParams.get('from'), 'mail', 'keeping its own query')
  const token = link.searchParams.get('token')!
  t.match(token, /^[A-Za-z0-9_-]{22}$/, '16 random bytes, base64url')
  t.equal(Buffer.from(token, 'base64url').toString('base64url'), token, 'in canonical base64url')

  const rows = await links(app, ada.id)
  t.equal(rows.length, 1, 'one stored link')
  t.equal(rows[0].email, 'ada@example.com', 'bound to the address it was sent to')
  t.ok(Math.abs(Date.parse(rows[0].expires_at) - (Date.now() + 7200 * 1000)) < 60_000, 'expires EMAIL_VERIFY_TTL from now')
  t.not(rows[0].token_hash, token, 'the stored value is not the token')
  t.notOk(rows[0].token_hash.includes(token), 'nor holds it')
  t.equal(
    rows[0].token_hash,
    createHmac('sha256', app.emailVerification.key).update(token).digest('base64url'),
    'but its HMAC under the verification key'
  )
  t.notOk(
    Object.values(rows[0]).some(v => String(v).includes(token)),
    'no column holds the token'
  )

  const me = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: ada.headers })
  t.equal(json(me).email_verified, false)
  t.equal(await verifiedAt(app, ada.id), null)
})

t.test('the default link points at /verify-email on HOST:PORT', async t => {
  const app = await build(t)
  await signUp(app)
  const [mail] = await verificationMail(app, 'ada@example.com')
  t.match(mail.body, /^ {2}http:\/\/127\.0\.0\.1:3000\/verify-email\?token=[A-Za-z0-9_-]{22}$/m)
  t.match(mail.body, /The link works for 24 hours\./)
  const long = mail.body.split('\n').filter(line => line.length > 76)
  t.same(long, [], "no line over 76 characters, the link's included: the mail goes out as 7-bit text")
})

t.test('a retried sign-up (same Idempotency-Key) queues no second message', async t => {
  const app = await build(t)
  await signUp(app, 'ada', { 'idempotency-key': 'k-1' })
  await signUp(app, 'ada', { 'idempotency-key': 'k-1' })
  t.equal((await verificationMail(app, 'ada@example.com')).length, 1)
})

t.test('confirming the link verifies the address: 204, email_verified true; confirming again changes nothing', async t => {
  const app = await build(t)
  const ada = await signUp(app)
  const before = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: ada.headers })
  const token = (await verificationToken(app, 'ada@example.com'))!

  const res = await confirm(app, token)
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  const at = await verifiedAt(app, ada.id)
  t.not(at, null, 'email_verified_at is set')
  const after = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: ada.headers })
  t.equal(json(after).email_verified, true)
  t.not(after.headers.etag, before.headers.etag, "the profile's ETag changes with it")

  const again = await confirm(app, token)
  t.equal(again.statusCode, 204, 'idempotent')
  t.same(await verifiedAt(app, ada.id), at, 'the first verification time is kept')
  t.equal((await verificationMail(app, 'ada@example.com')).length, 1, 'confirming mails nothing')
})

t.test('a token expires after EMAIL_VERIFY_TTL: valid the millisecond before, refused at the boundary', async t => {
  const app = await build(t, { env: { EMAIL_VERIFY_TTL: '3600' } })
  const ada = await signUp(app)
  const user = { id: ada.id, email: 'ada@example.com' }
  const issuedMs = Date.UTC(2026, 10, 23, 12, 0, 0)
  const token = await issueVerificationToken(app.db, app.emailVerification, user, issuedMs)
  const boundary = issuedMs + 3600 * 1000

  await t.rejects(
    confirmEmail(app.db, app.emailVerification, token, boundary),
    { code: 'InvalidVerificationToken', errors: [{ rule: 'expired' }] },
    'at exp: expired'
  )
  await t.rejects(confirmEmail(app.db, app.emailVerification, token, boundary + 1), { code: 'InvalidVerificationToken' }, 'after exp: expired')
  t.equal(await verifiedAt(app, ada.id), null, 'an expired token verified nothing')
  await confirmEmail(app.db, app.emailVerification, token, boundary - 1)
  t.not(await verifiedAt(app, ada.id), null, 'one millisecond before exp: verified')
})

t.test('through the route: a link issued just inside the TTL works, one just past it is 422 expired', async t => {
  const app = await build(t, { env: { EMAIL_VERIFY_TTL: '3600' } })
  const ada = await signUp(app)
  const user = { id: ada.id, email: 'ada@example.com' }
  const stale = await issueVerificationToken(app.db, app.emailVerification, user, Date.now() - 3600 * 1000 - 1000)
  await refused(t, app, stale, 'expired', 'issued an hour and a second ago')
  t.equal(await verifiedAt(app, ada.id), null)
  const fresh = await issueVerificationToken(app.db, app.emailVerification, user, Date.now() - 3600 * 1000 + 10_000)
  t.equal((await confirm(app, fresh)).statusCode, 204, 'issued ten seconds short of an hour ago')
})

t.test('tampered, guessed, stored-hash, other-key and old-format tokens are 422 invalid and verify nothing', async t => {
  const app = await build(t)
  const ada = await signUp(app, 'ada')
  const grace = await signUp(app, 'grace')
  const token = (await verificationToken(app, 'ada@example.com'))!
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1)

  await refused(t, app, flip(token, 5), 'invalid', 'a changed character')
  await refused(t, app, flip(token, 21), 'invalid', 'a changed last character')
  await refused(t, app, `${token}A`, 'invalid', 'a longer token')
  await refused(t, app, token.slice(0, -1), 'invalid', 'a shorter token')
  await refused(t, app, 'A'.repeat(22), 'invalid', 'a guess of the right shape')
  await refused(t, app, 'no-dot', 'invalid', 'not a token at all')
  const [stored] = await links(app, ada.id)
  await refused(t, app, stored.token_hash, 'invalid', 'the hash a copy of the database holds')
  const otherKey = await issueVerificationToken(
    app.db,
    { ...app.emailVerification, key: Buffer.alloc(32, 7) },
    { id: ada.id, email: 'ada@example.com' }
  )
  await refused(t, app, otherKey, 'invalid', 'stored under another key')
  // A link of the signed format, `<payload>.<MAC>`, is no token now.
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const signed = `${encode({ sub: ada.id, exp: Math.floor(Date.now() / 1000) + 3600 })}.${'A'.repeat(43)}`
  t.equal((await confirm(app, signed)).statusCode, 422, 'a signed-format token: 422')
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/verify-email',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `token=${signed}`
      })
    ).statusCode,
    422,
    'and on the page too'
  )
  // An access token is an HS256 JWT under JWT_SECRET itself: no use here.
  const access = ada.headers.authorization.slice('Bearer '.length)
  const jwtAsLink = await confirm(app, access)
  t.equal(jwtAsLink.statusCode, 422, 'an access token is not a verification token')

  for (const bad of ['', 'a.b c', `${token}.x`, `${token} `, 'x'.repeat(600), 42, null]) {
    const res = await confirm(app, bad)
    t.equal(res.statusCode, 422, `${JSON.stringify(bad).slice(0, 20)}: 422`)
    t.equal(json(res).code, 'ValidationFailed')
  }
  t.equal(await verifiedAt(app, ada.id), null, 'ada is still unverified')
  t.equal(await verifiedAt(app, grace.id), null, 'grace too')

  const graceToken = (await verificationToken(app, 'grace@example.com'))!
  t.equal((await confirm(app, graceToken)).statusCode, 204, "grace's own link verifies grace")
  t.equal(await verifiedAt(app, ada.id), null, 'and only grace')
})

t.test('a link for an address the account no longer has is refused; a new link for the new address works', async t => {
  const app = await build(t)
  const ada = await signUp(app)
  const old = (await verificationToken(app, 'ada@example.com'))!
  // No API route changes an address today: the test changes it where an operator would.
  await app.db.updateTable('user').set({ email: 'ada@new.example.com' }).where('id', '=', ada.id).execute()
  await refused(t, app, old, 'invalid', 'the link sent to the old address')
  t.equal(await verifiedAt(app, ada.id), null)

  t.equal((await resend(app, ada.id, ada.headers)).statusCode, 202)
  const fresh = (await verificationToken(app, 'ada@new.example.com'))!
  t.equal((await confirm(app, fresh)).statusCode, 204)
  t.not(await verifiedAt(app, ada.id), null)
})

t.test('a verified address that changes is refused by a link for the old one, whatever its state', async t => {
  const app = await build(t)
  const ada = await signUp(app)
  const old = (await verificationToken(app, 'ada@example.com'))!
  t.equal((await confirm(app, old)).statusCode, 204)
  await app.db.updateTable('user').set({ email: 'ada@new.example.com', email_verified_at: null }).where('id', '=', ada.id).execute()
  await refused(t, app, old, 'invalid', 'the old link does not verify the new address')
  t.equal(await verifiedAt(app, ada.id), null)
})

t.test('POST /v1/users/{userId}/verification-emails: 202 and a new link; self only; 409 once verified', async t => {
  const app = await build(t)
  const ada = await signUp(app, 'ada')
  const grace = await signUp(app, 'grace')

  const res = await resend(app, ada.id, ada.headers)
  t.equal(res.statusCode, 202)
  t.same(json(res), { status: 'queued' })
  const mails = await verificationMail(app, 'ada@example.com')
  t.equal(mails.length, 2, "sign-up's and this one")

  const theirs = await resend(app, grace.id, ada.headers)
  t.equal(theirs.statusCode, 403)
  t.equal(json(theirs).code, 'UserNotOwner')
  t.equal((await verificationMail(app, 'grace@example.com')).length, 1, 'nothing more queued to grace')

  const anonymous = await resend(app, ada.id)
  t.equal(anonymous.statusCode, 401)
  t.equal(json(anonymous).code, 'NotAuthenticated')
  t.equal((await app.inject({ method: 'POST', url: '/v1/users/not-a-uuid/verification-emails', headers: ada.headers })).statusCode, 422)

  const first = (await verificationToken(app, 'ada@example.com'))!
  t.equal((await confirm(app, first)).statusCode, 204, 'the newest link works')
  const verified = await resend(app, ada.id, ada.headers)
  t.equal(verified.statusCode, 409)
  t.equal(json(verified).code, 'EmailAlreadyVerified')
  t.equal((await verificationMail(app, 'ada@example.com')).length, 2, 'nothing queued once verified')
})

t.test('an earlier link keeps working after a resend, until it expires', async t => {
  const app = await build(t)
  const ada = await signUp(app)
  const first = (await verificationToken(app, 'ada@example.com'))!
  t.equal((await resend(app, ada.id, ada.headers)).statusCode, 202)
  const second = (await verificationToken(app, 'ada@example.com'))!
  t.not(second, first, 'the resend mails a new token')
  t.equal((await links(app, ada.id)).length, 2, 'both links are kept')
  t.equal((await confirm(app, first)).statusCode, 204)
  t.equal((await confirm(app, second)).statusCode, 204, 'and the newer one too (idempotent)')
})

t.test("a new link clears the user's expired links, and only theirs", async t => {
  const app = await build(t, { env: { EMAIL_VERIFY_TTL: '3600' } })
  const ada = await signUp(app, 'ada')
  const grace = await signUp(app, 'grace')
  const lapsed = Date.now() - 3600 * 1000 - 1000
  const stale = await issueVerificationToken(app.db, app.emailVerification, { id: ada.id, email: 'ada@example.com' }, lapsed)
  await issueVerificationToken(app.db, app.emailVerification, { id: grace.id, email: 'grace@example.com' }, lapsed)
  t.equal((await links(app, ada.id)).length, 2, "sign-up's and the lapsed one")
  await refused(t, app, stale, 'expired', 'the lapsed link, before a new one is issued')

  t.equal((await resend(app, ada.id, ada.headers)).statusCode, 202)
  const left = await links(app, ada.id)
  t.equal(left.length, 2, "sign-up's and the new one: the lapsed one is gone")
  t.ok(
    left.every(row => Date.parse(row.expires_at) > Date.now()),
    'none of them expired'
  )
  t.equal((await links(app, grace.id)).length, 2, "grace's lapsed link waits for her own next one")
  await refused(t, app, stale, 'invalid', 'the lapsed link once its row is gone')
  t.equal((await confirm(app, (await verificationToken(app, 'ada@example.com'))!)).statusCode, 204)
})

t.test('resend is behind the mail limits: MAIL_RATE_LIMIT_MAX per user from any IP, then 429 and nothing queued', async t => {
  const app = await build(t, { env: { MAIL_RATE_LIMIT_MAX: '2' } })
  const ada = await signUp(app)
  const statuses = []
  for (let n = 1; n <= 4; n++) statuses.push((await resend(app, ada.id, ada.headers, `10.9.0.${n}`)).statusCode)
  t.same(statuses, [202, 202, 429, 429])
  t.equal((await verificationMail(app, 'ada@example.com')).length, 3, "sign-up's and the two allowed")
  const limited = await app.inject({ method: 'POST', url: `/v1/users/${ada.id}/email`, headers: ada.headers })
  t.equal(limited.statusCode, 429, 'the budget is the one every mail route shares')
})

t.test('a banned user cannot resend (403 UserIsBanned)', async t => {
  const app = await build(t)
  const banned = await createUser(app, { active: false })
  const res = await resend(app, banned.id, banned.headers)
  t.equal(res.statusCode, 403)
  t.equal(json(res).code, 'UserIsBanned')
})

t.test('verifyEmail (the fixture) goes through the confirm route with the mailed token', async t => {
  const app = await build(t)
  const user = await createUser(app)
  await verifyEmail(app, user)
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: user.headers })).email_verified, true)
})
