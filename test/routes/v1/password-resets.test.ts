import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import t from 'tap'
import { createUser, PASSWORD } from '../../fixtures.js'
import { build, migratedDatabase, json } from '../../helper.js'
import { newMail, signIn, signUpVerified, tokenIn, tokenStatus } from '../../account-fixtures.js'
import { RESET_SUBJECT, resetPassword, resetSettings } from '../../../src/domain/password-reset.js'

/**
 * Forgotten passwords: POST /v1/password-resets always answers 202; an active account with a
 * verified address gets a link whose token sets a new password once, within the hour, through
 * POST /v1/password-resets/confirmations, ending every token of the account.
 */

const NEW_PASSWORD = 'a much longer new passphrase'
const ask = (app: FastifyInstance, payload: object, remoteAddress?: string) =>
  app.inject({ method: 'POST', url: '/v1/password-resets', payload, remoteAddress })
const confirm = (app: FastifyInstance, token: string, password = NEW_PASSWORD) =>
  app.inject({ method: 'POST', url: '/v1/password-resets/confirmations', payload: { token, new_password: password } })
const resetMails = async (app: FastifyInstance) => (await newMail(app)).filter(m => m.subject === RESET_SUBJECT)

t.test('the mailed link sets a new password once and ends every token of the account', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  const phone = await signIn(app, 'ada')
  const res = await ask(app, { email: 'ADA@example.com' })
  t.equal(res.statusCode, 202)
  t.same(json(res), { status: 'queued' })
  const [mail] = await resetMails(app)
  t.equal(mail.to, 'ada@example.com')
  t.match(mail.text, /^ {2}http:\/\/127\.0\.0\.1:3000\/reset-password\?token=[\w-]{22}$/m, 'a link to the page Roja serves')

  const done = await confirm(app, tokenIn(mail))
  t.equal(done.statusCode, 204)
  t.equal(await tokenStatus(app, ada.headers), 401, 'every token ended')
  t.equal(await tokenStatus(app, phone), 401)
  t.ok(await signIn(app, 'ada', NEW_PASSWORD), 'the new password signs in')
  t.equal((await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'ada', password: PASSWORD } })).statusCode, 401)

  const replay = await confirm(app, tokenIn(mail), 'yet another passphrase here')
  t.equal(replay.statusCode, 422, 'a replayed token is refused')
  t.equal(json(replay).code, 'InvalidResetToken')
  t.equal(json(replay).errors[0].rule, 'invalid')
  t.ok(await signIn(app, 'ada', NEW_PASSWORD), 'the replay changed nothing')
})

t.test('a username works as well as an address', async t => {
  const app = await build(t)
  await signUpVerified(app, 'ada')
  t.equal((await ask(app, { username: ' ADA ' })).statusCode, 202)
  const mails = await resetMails(app)
  t.same(
    mails.map(m => m.to),
    ['ada@example.com']
  )
  t.equal((await ask(app, { username: 'ada', email: 'ada@example.com' })).statusCode, 422, 'not both')
  t.equal((await ask(app, {})).statusCode, 422, 'one of them')
})

t.test('unknown, unverified and banned accounts: the same 202 and no mail', async t => {
  const app = await build(t)
  await signUpVerified(app, 'unverified', { verify: false })
  await createUser(app, { username: 'banned', active: false, verified: true })
  await newMail(app)
  for (const body of [
    { email: 'nobody@example.com' },
    { username: 'nobody' },
    { email: 'unverified@example.com' },
    { email: 'banned@example.com' }
  ]) {
    const res = await ask(app, body)
    t.equal(res.statusCode, 202, JSON.stringify(body))
    t.same(json(res), { status: 'queued' })
    t.same(res.headers['content-length'], '19')
  }
  t.same(await newMail(app), [], 'nothing mailed')
  t.same(await app.db.selectFrom('password_reset').selectAll().execute(), [], 'no link made')
})

t.test('a newer link, a password change or an address change ends the earlier links', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  await ask(app, { email: 'ada@example.com' })
  const first = tokenIn((await resetMails(app))[0])
  await ask(app, { email: 'ada@example.com' })
  const second = tokenIn((await resetMails(app))[0])
  t.equal((await confirm(app, first)).statusCode, 422, 'the first link died when the second was sent')

  const change = await app.inject({
    method: 'PUT',
    url: '/v1/profiles/me/password',
    headers: ada.headers,
    payload: { current_password: PASSWORD, new_password: NEW_PASSWORD }
  })
  t.equal(change.statusCode, 200)
  t.equal((await confirm(app, second, 'something else entirely')).statusCode, 422, 'the second died with the password change')

  await ask(app, { email: 'ada@example.com' })
  const third = tokenIn((await resetMails(app))[0])
  const fresh = { authorization: `Bearer ${json(change).access_token as string}` }
  await app.inject({
    method: 'POST',
    url: '/v1/profiles/me/email-changes',
    headers: fresh,
    payload: { current_password: NEW_PASSWORD, email: 'ada@new.example' }
  })
  const link = (await newMail(app)).find(m => m.to === 'ada@new.example')!
  t.equal((await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: { token: tokenIn(link) } })).statusCode, 204)
  t.equal((await confirm(app, third, 'something else entirely')).statusCode, 422, 'the third died with the address change')
  t.ok(await signIn(app, 'ada', NEW_PASSWORD))
})

t.test('an expired link is refused and used up; a malformed one too', async t => {
  const app = await build(t)
  await signUpVerified(app, 'ada')
  await ask(app, { email: 'ada@example.com' })
  const token = tokenIn((await resetMails(app))[0])
  const settings = resetSettings(app.config.jwtSecret, app.config.passwordResetUrl)
  const row = await app.db.selectFrom('password_reset').select('expires_at').executeTakeFirstOrThrow()
  const expiry = Date.parse(row.expires_at)
  t.ok(Math.abs(expiry - Date.now() - 3600_000) < 60_000, 'the link works for an hour')
  await t.rejects(
    resetPassword(app.db, settings, token, NEW_PASSWORD, app.config.PASSWORD_HASH_COST, expiry),
    { code: 'InvalidResetToken', errors: [{ rule: 'expired' }] },
    'at the expiry: expired'
  )
  t.equal((await confirm(app, token)).statusCode, 422, 'and used up: refused within the hour too')
  t.ok(await signIn(app, 'ada'), 'the password is unchanged')

  for (const bad of ['short', 'A'.repeat(22), `${token}x`]) {
    const res = await confirm(app, bad)
    t.equal(res.statusCode, 422, `malformed or unknown: ${bad.length} characters`)
    t.equal(json(res).code, 'InvalidResetToken')
  }
  t.equal((await confirm(app, 'x', 'short')).statusCode, 422, 'a short new password fails validation')
})

t.test("a link of one account sets only that account's password", async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  const grace = await signUpVerified(app, 'grace')
  await ask(app, { email: 'ada@example.com' })
  const token = tokenIn((await resetMails(app))[0])
  t.equal((await confirm(app, token)).statusCode, 204)
  t.ok(await signIn(app, 'grace'), 'grace keeps her password')
  t.equal((await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'grace', password: NEW_PASSWORD } })).statusCode, 401)
  t.equal(await tokenStatus(app, grace.headers), 200, 'and her tokens')
  t.equal(await tokenStatus(app, ada.headers), 401)
})

t.test('a reset asked a hundred times: limited per address and per client, one live link', async t => {
  const max = 5
  const app = await build(t, { env: { MAIL_RATE_LIMIT_MAX: String(max) } })
  await signUpVerified(app, 'ada')
  await newMail(app)
  const statuses: number[] = []
  for (let n = 0; n < 100; n++) statuses.push((await ask(app, { email: 'ada@example.com' }, `10.5.${Math.floor(n / 200)}.${n + 1}`)).statusCode)
  t.same(statuses, [...Array(max).fill(202), ...Array(100 - max).fill(429)], `${max} from a hundred clients, then 429 for the address`)
  t.equal((await resetMails(app)).length, max, 'only the allowed ones mailed')
  t.equal((await app.db.selectFrom('password_reset').selectAll().execute()).length, 1, 'one live link')

  const client: number[] = []
  for (let n = 0; n < max + 2; n++) client.push((await ask(app, { email: `someone-${n}@example.com` }, '10.6.0.1')).statusCode)
  t.same(client, [...Array(max).fill(202), 429, 429], 'one client asking for many addresses stops too')
  const limited = await ask(app, { email: 'other@example.com' }, '10.6.0.1')
  t.ok(Number(limited.headers['retry-after']) >= 1)
  t.equal(json(limited).code, 'RateLimited')
})

t.test('with Redis unreachable the reset limit still holds', async t => {
  const app = await build(t, { env: { MAIL_RATE_LIMIT_MAX: '2', REDIS_URL: 'redis://127.0.0.1:1' } })
  const statuses: number[] = []
  for (let n = 0; n < 4; n++) statuses.push((await ask(app, { email: 'ada@example.com' }, `10.4.0.${n + 1}`)).statusCode)
  t.same(statuses, [202, 202, 429, 429])
})

t.test('in a fleet the reset limits are shared through Redis: two instances, one count', async t => {
  const run = randomBytes(6).toString('hex')
  // client addresses of this run only, so counts never mix with other runs (Redis is shared)
  const [r1, r2] = randomBytes(2)
  const ips = [1, 2, 3, 4].map(n => `10.${r1}.${r2}.${n}`)
  t.teardown(async () => {
    const redis = new Redis('redis://127.0.0.1:6379')
    const keys = (await Promise.all([run, ...ips].map(part => redis.keys(`roja-rl:*${part}*`)))).flat()
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })
  const ip = ips[3]
  const database = await migratedDatabase(t)
  const env = { REDIS_URL: 'redis://127.0.0.1:6379', MAIL_RATE_LIMIT_MAX: '2' }
  const a = await build(t, { env, database })
  const b = await build(t, { env, database })
  const address = `someone-${run}@example.com`
  const statuses = [
    (await ask(a, { email: address }, ips[0])).statusCode,
    (await ask(b, { email: address }, ips[1])).statusCode,
    (await ask(a, { email: address }, ips[2])).statusCode
  ]
  t.same(statuses, [202, 202, 429], 'per address, whichever instance answers')
  const client = [
    (await ask(b, { email: `x-${run}@example.com` }, ip)).statusCode,
    (await ask(a, { email: `y-${run}@example.com` }, ip)).statusCode,
    (await ask(b, { email: `z-${run}@example.com` }, ip)).statusCode
  ]
  t.same(client, [202, 202, 429], 'per client, whichever instance answers')
})
