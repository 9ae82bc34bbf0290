import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build, json, TEST_SECRET } from '../../helper.js'
import { createUser, PASSWORD } from '../../fixtures.js'

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

const tokenJson = (app: FastifyInstance, payload: unknown) =>
  app.inject({ method: 'POST', url: '/v1/auth/token', payload: payload as Record<string, unknown> })
const tokenForm = (app: FastifyInstance, form: string, headers: Record<string, string> = FORM) =>
  app.inject({ method: 'POST', url: '/v1/auth/token', payload: form, headers })

function claims (token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())
}

t.test('POST /v1/auth/token', async (t) => {
  const logs: string[] = []
  const app = await build(t, { logs })
  const user = await createUser(app, { username: 'grace' })

  t.test('JSON credentials give an HS256 bearer token with id, iat and exp', async (t) => {
    const res = await tokenJson(app, { username: 'grace', password: PASSWORD })
    t.equal(res.statusCode, 200)
    const body = json(res)
    t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'token_type'])
    t.equal(body.token_type, 'Bearer')
    t.equal(body.expires_in, 3600)
    t.equal(res.headers['cache-control'], 'no-store')
    const header = JSON.parse(Buffer.from(body.access_token.split('.')[0], 'base64url').toString())
    t.equal(header.alg, 'HS256')
    const c = claims(body.access_token)
    t.equal(c.id, user.id)
    t.equal(Number(c.exp) - Number(c.iat), 3600)
    const me = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: { authorization: `Bearer ${body.access_token}` } })
    t.equal(me.statusCode, 200, 'the token works')
  })

  t.test('the username is matched as sign-up stores it: stripped and lower-cased', async (t) => {
    t.equal((await tokenJson(app, { username: '  GRACE ', password: PASSWORD })).statusCode, 200)
  })

  t.test('the RFC 6749 form works, with an optional scope', async (t) => {
    const res = await tokenForm(app, `grant_type=password&username=grace&password=${encodeURIComponent(PASSWORD)}`)
    t.equal(res.statusCode, 200)
    t.equal(claims(json(res).access_token).id, user.id)
    const scoped = await tokenForm(app, `grant_type=password&username=grace&password=${encodeURIComponent(PASSWORD)}&scope=read`, { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' })
    t.equal(scoped.statusCode, 200)
  })

  t.test('the form needs grant_type=password', async (t) => {
    const missing = await tokenForm(app, `username=grace&password=${encodeURIComponent(PASSWORD)}`)
    t.equal(missing.statusCode, 422)
    t.same(json(missing).errors.map((e: { field: string, rule: string }) => [e.field, e.rule]), [['/grant_type', 'required']])
    const other = await tokenForm(app, `grant_type=client_credentials&username=grace&password=${encodeURIComponent(PASSWORD)}`)
    t.equal(other.statusCode, 422)
    t.equal(json(other).errors[0].field, '/grant_type')
  })

  t.test('a repeated form parameter is 400 MalformedBody (RFC 6749 §3.2)', async (t) => {
    const res = await tokenForm(app, `grant_type=password&username=grace&username=other&password=${encodeURIComponent(PASSWORD)}`)
    t.equal(res.statusCode, 400)
    t.equal(json(res).code, 'MalformedBody')
  })

  t.test('an unknown form or JSON property is 422', async (t) => {
    t.equal((await tokenForm(app, 'grant_type=password&username=grace&password=x&client_secret=s')).statusCode, 422)
    t.equal((await tokenJson(app, { username: 'grace', password: PASSWORD, grant_type: 'password' })).statusCode, 422)
  })

  t.test('a missing body or field is 422', async (t) => {
    const none = await app.inject({ method: 'POST', url: '/v1/auth/token' })
    t.equal(none.statusCode, 422)
    t.match(json(none).errors[0], { in: 'body', field: '', rule: 'type', message: 'must be an object' }, 'validated by the JSON schema')
    t.equal((await tokenJson(app, { username: 'grace' })).statusCode, 422)
    t.equal((await tokenJson(app, { password: PASSWORD })).statusCode, 422)
  })

  t.test('forms are refused (415) on other routes', async (t) => {
    const res = await app.inject({ method: 'POST', url: '/v1/profiles', payload: 'username=x', headers: FORM })
    t.equal(res.statusCode, 415)
    const text = await app.inject({ method: 'POST', url: '/v1/auth/token', payload: 'username=x', headers: { 'content-type': 'text/plain' } })
    t.equal(text.statusCode, 415)
  })

  t.test('a wrong password and an unknown username get the same 401 InvalidCredentials', async (t) => {
    const wrong = await tokenJson(app, { username: 'grace', password: 'not the password' })
    const unknown = await tokenJson(app, { username: 'nobody', password: PASSWORD })
    for (const res of [wrong, unknown]) {
      t.equal(res.statusCode, 401)
      t.equal(json(res).code, 'InvalidCredentials')
    }
    const strip = (b: string) => ({ ...JSON.parse(b), instance: undefined })
    t.same(strip(wrong.body), strip(unknown.body), 'the two answers cannot be told apart')
  })

  t.test('a banned user with the right password is refused 403 UserIsBanned', async (t) => {
    await createUser(app, { username: 'banned-one', active: false })
    const res = await tokenJson(app, { username: 'banned-one', password: PASSWORD })
    t.equal(res.statusCode, 403)
    t.equal(json(res).code, 'UserIsBanned')
  })

  t.test('no password, token or secret in any log line', async (t) => {
    const text = logs.join('\n')
    t.notOk(text.includes(PASSWORD), 'no password')
    t.notOk(text.includes(TEST_SECRET), 'no secret')
    t.notOk(text.includes(user.token.split('.')[2]), 'no token signature')
    t.notOk(/eyJ[A-Za-z0-9_-]+\.eyJ/.test(text), 'no JWT at all')
    t.notOk(/scrypt\$/.test(text), 'no password hash')
  })
})

t.test('the token lifetime follows ACCESS_TOKEN_TTL', async (t) => {
  const app = await build(t, { env: { ACCESS_TOKEN_TTL: '120' } })
  await createUser(app, { username: 'ttl' })
  const res = await tokenJson(app, { username: 'ttl', password: PASSWORD })
  t.equal(json(res).expires_in, 120)
  const c = claims(json(res).access_token)
  t.equal(Number(c.exp) - Number(c.iat), 120)
})

t.test('the token route has a stricter limit per client IP and username', async (t) => {
  const app = await build(t, { env: { AUTH_RATE_LIMIT_MAX: '3' } })
  await createUser(app, { username: 'limited' })
  const attempt = (username: string, remoteAddress = '10.0.0.1') => app.inject({
    method: 'POST', url: '/v1/auth/token', remoteAddress, payload: { username, password: 'wrong password' }
  })
  for (let i = 0; i < 3; i++) t.equal((await attempt('limited')).statusCode, 401, `attempt ${i + 1} is answered`)
  const limited = await attempt('LIMITED ')
  t.equal(limited.statusCode, 429, 'the fourth attempt for the same (normalised) username is refused')
  t.equal(json(limited).code, 'RateLimited')
  t.equal(limited.headers['content-type'], 'application/problem+json; charset=utf-8')
  t.match(String(limited.headers['retry-after']), /^\d+$/)
  t.ok(Number(limited.headers['retry-after']) >= 1)
  t.equal((await attempt('limited', '10.0.0.2')).statusCode, 401, 'another IP still may try')
  t.equal((await attempt('someone-else')).statusCode, 401, 'another username from the same IP still may try')
  const right = await app.inject({ method: 'POST', url: '/v1/auth/token', remoteAddress: '10.0.0.1', payload: { username: 'limited', password: PASSWORD } })
  t.equal(right.statusCode, 429, 'even the right password waits out the window')
})

t.test('the token route still counts toward the global per-client limit', async (t) => {
  const app = await build(t, { env: { RATE_LIMIT_MAX: '4', AUTH_RATE_LIMIT_MAX: '100' } })
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) {
    const res = await app.inject({ method: 'POST', url: '/v1/auth/token', remoteAddress: '10.0.0.9', payload: { username: `spray${i}`, password: 'wrong password' } })
    statuses.push(res.statusCode)
  }
  t.same(statuses, [401, 401, 401, 401, 429], 'spraying usernames from one IP hits the per-client limit')
})
