import { createHmac, createSign, generateKeyPairSync, randomUUID } from 'node:crypto'
import Fastify from 'fastify'
import t from 'tap'
import auth from '../../plugins/auth.js'
import { createDb } from '../../src/db/dialect.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { verificationKey } from '../../src/domain/email-verification.js'
import etag from '../../plugins/etag.js'
import owner from '../../plugins/owner.js'
import { findAccount, invalidToken } from '../../src/domain/users.js'
import config from '../../plugins/config.js'
import db from '../../plugins/db.js'
import problems from '../../plugins/problems.js'
import { build, json, testConfig, TEST_SECRET, whileMigrating } from '../helper.js'
import { createCreator, createUser } from '../fixtures.js'

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)

/** A compact JWS with any header, payload and signature algorithm, to forge what attackers send. */
function forge (header: Record<string, unknown>, payload: Record<string, unknown>, sign: (input: string) => string): string {
  const input = `${b64(header)}.${b64(payload)}`
  return `${input}.${sign(input)}`
}
const hmac = (hash: string, key: string) => (input: string) => createHmac(hash, key).update(input).digest('base64url')
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
const rs256 = (input: string) => createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')

t.test('the bearer token check on an authenticated route', async t => {
  const logs: string[] = []
  const app = await build(t, { logs })
  const user = await createUser(app)
  const claims = { id: user.id, gen: 0, iss: 'roja', aud: 'roja-api', iat: now(), exp: now() + 600 }
  const me = (authorization?: string) =>
    app.inject({ method: 'GET', url: '/v1/profiles/me', headers: authorization === undefined ? {} : { authorization } })

  t.test('a valid HS256 token passes; the scheme name is case-insensitive', async t => {
    t.equal((await me(`Bearer ${user.token}`)).statusCode, 200)
    t.equal((await me(`bearer ${user.token}`)).statusCode, 200)
    t.equal(
      (await me(`Bearer ${forge({ alg: 'HS256', typ: 'JWT' }, claims, hmac('sha256', TEST_SECRET))}`)).statusCode,
      200,
      'a hand-made HS256 token verifies'
    )
  })

  t.test('no Authorization header is 401 NotAuthenticated with WWW-Authenticate', async t => {
    const res = await me()
    t.equal(res.statusCode, 401)
    t.equal(json(res).code, 'NotAuthenticated')
    t.equal(res.headers['www-authenticate'], 'Bearer')
    t.equal((await me('')).statusCode, 401)
  })

  const refused: Array<[string, string]> = [
    ['alg none, no signature', `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`],
    ['alg none, some signature', forge({ alg: 'none', typ: 'JWT' }, claims, () => 'c2ln')],
    ['HS384 with the right secret', forge({ alg: 'HS384', typ: 'JWT' }, claims, hmac('sha384', TEST_SECRET))],
    ['HS512 with the right secret', forge({ alg: 'HS512', typ: 'JWT' }, claims, hmac('sha512', TEST_SECRET))],
    ['RS256 signed with a private key', forge({ alg: 'RS256', typ: 'JWT' }, claims, rs256)],
    ['key confusion: RS256 header, HMAC-SHA256 with the secret', forge({ alg: 'RS256', typ: 'JWT' }, claims, hmac('sha256', TEST_SECRET))],
    ['key confusion: ES256 header, HMAC-SHA256 with the secret', forge({ alg: 'ES256', typ: 'JWT' }, claims, hmac('sha256', TEST_SECRET))],
    ['wrong signature (another secret)', forge({ alg: 'HS256', typ: 'JWT' }, claims, hmac('sha256', 'another-secret-that-is-also-32-bytes-long'))],
    ['expired', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now() - 7200, exp: now() - 3600 }, hmac('sha256', TEST_SECRET))],
    ['no exp (RFC 8725: exp required)', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, exp: undefined }, hmac('sha256', TEST_SECRET))],
    ['no iat', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: undefined }, hmac('sha256', TEST_SECRET))],
    [
      'exp ten years out (over ACCESS_TOKEN_TTL)',
      forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, exp: now() + 10 * 365 * 86400 }, hmac('sha256', TEST_SECRET))
    ],
    [
      'issued longer ago than the lifetime',
      forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now() - 3700, exp: now() + 60 }, hmac('sha256', TEST_SECRET))
    ],
    ['another issuer', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, iss: 'someone-else' }, hmac('sha256', TEST_SECRET))],
    ['no issuer', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, iss: undefined }, hmac('sha256', TEST_SECRET))],
    ['another audience', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, aud: 'other-api' }, hmac('sha256', TEST_SECRET))],
    ['no audience', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, aud: undefined }, hmac('sha256', TEST_SECRET))],
    ['no token generation', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, gen: undefined }, hmac('sha256', TEST_SECRET))],
    ['another token generation', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, gen: 1 }, hmac('sha256', TEST_SECRET))],
    ['nbf in the future', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, nbf: now() + 3600 }, hmac('sha256', TEST_SECRET))],
    [
      'iat an hour in the future (it would outlive maxAge)',
      forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now() + 3600, exp: now() + 3600 + 600 }, hmac('sha256', TEST_SECRET))
    ],
    [
      'iat past the allowed clock skew',
      forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now() + 90, exp: now() + 600 }, hmac('sha256', TEST_SECRET))
    ],
    ['tampered payload', `${user.token.split('.')[0]}.${b64({ ...claims, id: randomUUID() })}.${user.token.split('.')[2]}`],
    ['no id claim', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, id: undefined }, hmac('sha256', TEST_SECRET))],
    ['a numeric id claim', forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, id: 42 }, hmac('sha256', TEST_SECRET))],
    ['not a JWT', 'abc'],
    ['two parts', 'abc.def'],
    ['garbage in three parts', 'a.b.c']
  ]
  for (const [name, token] of refused) {
    t.test(`${name}: 401 InvalidCredentials`, async t => {
      const res = await me(`Bearer ${token}`)
      t.equal(res.statusCode, 401)
      t.equal(json(res).code, 'InvalidCredentials')
      t.match(res.headers['www-authenticate'], /^Bearer error="invalid_token"/)
    })
  }

  t.test('an iat within the clock skew (60 s) of another instance is accepted', async t => {
    t.equal(
      (await me(`Bearer ${forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now() + 30, exp: now() + 600 }, hmac('sha256', TEST_SECRET))}`))
        .statusCode,
      200
    )
  })

  t.test('malformed Authorization headers: 401 InvalidCredentials', async t => {
    for (const header of [
      user.token,
      `Basic ${Buffer.from('a:b').toString('base64')}`,
      'Bearer',
      'Bearer ',
      `Token ${user.token}`,
      `Bearer ${user.token} extra`,
      `Bearer\t${user.token}`
    ]) {
      const res = await me(header)
      t.equal(res.statusCode, 401, JSON.stringify(header.slice(0, 20)))
      t.equal(json(res).code, 'InvalidCredentials')
    }
  })

  t.test('a token of a deleted user is 401 InvalidCredentials', async t => {
    const gone = await createUser(app)
    await app.db.deleteFrom('user').where('id', '=', gone.id).execute()
    const res = await me(`Bearer ${gone.token}`)
    t.equal(res.statusCode, 401)
    t.equal(json(res).code, 'InvalidCredentials')
    t.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
    const put = await app.inject({ method: 'PUT', url: '/v1/profiles/me', headers: gone.headers, payload: { first_name: 'X' } })
    t.equal(put.statusCode, 401, 'PUT too (the other path to the same rule)')
    t.equal(json(put).code, 'InvalidCredentials')
  })

  t.test('a banned user is 403 UserIsBanned on every authenticated route of profiles', async t => {
    const banned = await createUser(app, { active: false })
    const routes = [
      { method: 'GET' as const, url: '/v1/profiles/me' },
      { method: 'PUT' as const, url: '/v1/profiles/me', payload: { first_name: 'X' } }
    ]
    for (const route of routes) {
      const res = await app.inject({ ...route, headers: banned.headers })
      t.equal(res.statusCode, 403, `${route.method} ${route.url}`)
      t.equal(json(res).code, 'UserIsBanned')
    }
  })

  t.test('a ban takes effect on tokens issued before it', async t => {
    const later = await createUser(app)
    t.equal((await me(later.headers.authorization)).statusCode, 200)
    await app.db.updateTable('user').set({ is_active: false }).where('id', '=', later.id).execute()
    t.equal((await me(later.headers.authorization)).statusCode, 403)
  })

  t.test('no token, secret or Authorization header in the logs or answers', async t => {
    const text = logs.join('\n')
    t.notOk(text.includes(TEST_SECRET))
    t.notOk(text.includes(user.token))
    t.notOk(text.includes(user.token.split('.')[2]), 'not even the signature')
    t.notOk(/eyJ[A-Za-z0-9_-]+\.eyJ/.test(text), 'no JWT at all')
  })
})

t.test('requireCreator and the declared owner rules on a bare Fastify', async t => {
  const cfg = testConfig()
  const server = Fastify()
  t.teardown(() => server.close())
  await server.register(config, { config: cfg })
  await server.register(problems)
  await server.register(db, { connect: log => createDb('sqlite::memory:', { log }), migrate: migrateToLatest })
  await server.register(auth, { findAccount, invalidToken, verificationKey })
  await server.register(etag)
  await server.register(owner)
  await server.register(async group => {
    group.addHook('onRequest', group.authenticate)
    group.get('/creator-only', { onRequest: group.requireCreator }, async () => ({ ok: true }))
    group.get('/owned/:ownerId', { config: { owner: { param: 'ownerId' } } }, async () => ({ ok: true }))
    // an `of` rule: the handler hands the resource over; a creator rule on top
    group.post<{ Params: { ownerId: string } }>(
      '/things/:ownerId',
      { config: { owner: { of: (thing: { by: string }) => thing.by, creator: true } } },
      async request => request.owned({ by: request.params.ownerId })
    )
  })
  await whileMigrating(() => server.ready())
  const creator = await createCreator(server)
  const user = await createUser(server)

  t.equal((await server.inject({ method: 'GET', url: '/creator-only', headers: creator.headers })).statusCode, 200)
  const notCreator = await server.inject({ method: 'GET', url: '/creator-only', headers: user.headers })
  t.equal(notCreator.statusCode, 403)
  t.equal(json(notCreator).code, 'UserNotCreator')
  t.equal((await server.inject({ method: 'GET', url: '/creator-only' })).statusCode, 401)

  t.equal((await server.inject({ method: 'GET', url: `/owned/${user.id}`, headers: user.headers })).statusCode, 200)
  const other = await server.inject({ method: 'GET', url: `/owned/${creator.id}`, headers: user.headers })
  t.equal(other.statusCode, 403)
  t.equal(json(other).code, 'UserNotOwner')
  const things = async (who: typeof user, ownerId: string) => {
    const res = await server.inject({ method: 'POST', url: `/things/${ownerId}`, headers: who.headers })
    return res.statusCode === 200 ? 200 : json(res).code
  }
  t.same(
    [await things(creator, creator.id), await things(user, creator.id), await things(user, user.id)],
    [200, 'UserNotOwner', 'UserNotCreator'],
    'an `of` rule: the owner, then a creator'
  )

  const issued = server.issueToken({ id: user.id, generation: 0 })
  t.equal(issued.token_type, 'Bearer')
  t.equal(issued.expires_in, cfg.ACCESS_TOKEN_TTL)
  t.equal(
    (await server.inject({ method: 'GET', url: `/owned/${user.id}`, headers: { authorization: `Bearer ${issued.access_token}` } })).statusCode,
    200
  )
})
