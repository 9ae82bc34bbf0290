import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { build, json } from '../../helper.js'
import { createUser } from '../../fixtures.js'

const ALLOWED_AVATAR = 'http://127.0.0.1:3000/v1/media/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'
const HOST_RULE = 'files are to be uploaded only to internal services'
let seq = 0

function signUpBody (overrides: Record<string, unknown> = {}) {
  seq += 1
  return { username: `person${seq}`, email: `person${seq}@example.com`, password: 'twelve-chars', first_name: 'Ada', ...overrides }
}

const signUp = (app: FastifyInstance, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/v1/profiles', payload: body, headers })

/** The rule names a 422 reports for one field. */
function rulesFor (res: LightMyRequestResponse, field: string): string[] {
  return (json(res).errors ?? []).filter((e: { field: string }) => e.field === field).map((e: { rule: string }) => e.rule)
}

t.test('POST /v1/profiles signs up: 201, Location, the private profile, no password data', async t => {
  const app = await build(t)
  const res = await signUp(app, {
    username: '  Ada_Lovelace-1 ',
    email: 'Ada@Example.COM',
    password: 'correct horse battery',
    first_name: 'Ada',
    last_name: 'Lovelace',
    age: 36,
    favorite_band: 'Queen',
    website: 'https://ada.example.com'
  })
  t.equal(res.statusCode, 201)
  const body = json(res)
  t.equal(res.headers.location, `/v1/profiles/${body.id}`)
  t.match(body, {
    username: 'ada_lovelace-1',
    email: 'ada@example.com',
    first_name: 'Ada',
    last_name: 'Lovelace',
    age: 36,
    favorite_band: 'Queen',
    website: 'https://ada.example.com',
    avatar_url: null,
    is_creator: false
  })
  t.match(body.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/)
  t.notOk(res.body.includes('correct horse'), 'the password is not echoed')
  t.notOk(/password|hash/.test(res.body), 'no password data')

  const user = await app.db.selectFrom('user').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow()
  t.match(user.password_hash, /^scrypt\$1024\$8\$1\$/, 'the password is stored hashed, at the configured cost (2^10 here)')
  t.notOk(user.password_hash.includes('correct horse'))

  const read = await app.inject({ method: 'GET', url: res.headers.location as string })
  t.equal(read.statusCode, 200)
  t.notOk('email' in json(read), 'the public profile has no e-mail')
  t.equal(json(read).username, 'ada_lovelace-1')
})

t.test('optional fields default to null', async t => {
  const app = await build(t)
  const res = await signUp(app, signUpBody())
  t.equal(res.statusCode, 201)
  t.match(json(res), { last_name: null, age: null, favorite_band: null, website: null, avatar_url: null })
})

t.test('validation rules at their boundaries', async t => {
  const app = await build(t)
  const cases: Array<[string, string, Record<string, unknown>, boolean, (string | string[])?]> = [
    ['first_name of 0 characters', '/first_name', { first_name: '' }, false, 'minLength'],
    ['first_name of 1 character', '/first_name', { first_name: 'A' }, true],
    ['first_name of 128 characters', '/first_name', { first_name: 'a'.repeat(128) }, true],
    ['first_name of 129 characters', '/first_name', { first_name: 'a'.repeat(129) }, false, 'maxLength'],
    ['age 17', '/age', { age: 17 }, false, 'minimum'],
    ['age 18', '/age', { age: 18 }, true],
    ['age 18.5', '/age', { age: 18.5 }, false, 'type'],
    ['age as text', '/age', { age: '18' }, false, 'type'],
    ['password of 11 characters', '/password', { password: 'a'.repeat(11) }, false, 'minLength'],
    ['password of 12 characters', '/password', { password: 'a'.repeat(12) }, true],
    ['username with letters, digits, - and _', '/username', { username: `Ab-9_${seq}` }, true],
    ['username with a space inside', '/username', { username: 'ab cd' }, false, 'pattern'],
    ['username with a dot', '/username', { username: 'ab.cd' }, false, 'pattern'],
    ['username with a non-ASCII letter', '/username', { username: 'josé' }, false, 'pattern'],
    ['empty username', '/username', { username: '' }, false, 'pattern'],
    ['blank username', '/username', { username: '   ' }, false, 'pattern'],
    ['valid email', '/email', { email: `x${seq}@example.org` }, true],
    ['email without @', '/email', { email: 'not-an-email' }, false, 'format'],
    ['email without domain', '/email', { email: 'someone@' }, false, 'format'],
    ['https website', '/website', { website: 'https://example.com/me' }, true],
    ['website that is not a URL', '/website', { website: 'not a url' }, false, ['format', 'pattern']],
    ['ftp website', '/website', { website: 'ftp://example.com' }, false, 'pattern'],
    ['favorite_band from the list', '/favorite_band', { favorite_band: 'Radiohead' }, true],
    ['favorite_band not on the list', '/favorite_band', { favorite_band: 'Nickelback' }, false, 'enum'],
    ['favorite_band in another case', '/favorite_band', { favorite_band: 'radiohead' }, false, 'enum'],
    ['missing first_name', '/first_name', { first_name: undefined }, false, 'required'],
    ['unknown property', '/is_creator', { is_creator: true }, false, 'additionalProperties'],
    ['avatar_url on sign-up', '/avatar_url', { avatar_url: ALLOWED_AVATAR }, false, 'additionalProperties']
  ]
  for (const [name, field, overrides, ok, rule] of cases) {
    const body = signUpBody(overrides)
    if (overrides.first_name === undefined && 'first_name' in overrides) delete (body as Record<string, unknown>).first_name
    const res = await signUp(app, body)
    if (ok) {
      t.equal(res.statusCode, 201, `${name} is accepted`)
    } else {
      t.equal(res.statusCode, 422, `${name} is refused`)
      t.equal(json(res).code, 'ValidationFailed')
      t.same(rulesFor(res, field).sort(), [rule ?? []].flat(), `${name} fails rule ${String(rule)} at ${field}`)
    }
  }
})

t.test('username `me` in any case and with spaces is refused with InvalidUserData', async t => {
  const app = await build(t)
  for (const username of ['me', 'ME', '  Me ', '\tmE\n']) {
    const res = await signUp(app, signUpBody({ username }))
    t.equal(res.statusCode, 422, JSON.stringify(username))
    const body = json(res)
    t.equal(body.code, 'InvalidUserData')
    t.equal(body.detail, 'bad username, choose another')
    t.same(body.errors, [{ in: 'body', field: '/username', rule: 'reserved', message: 'bad username, choose another' }])
  }
  t.equal(json(await signUp(app, signUpBody({ username: 'meme' }))).username, 'meme', 'only exactly `me` is reserved')
})

t.test('a taken username or e-mail is 409, whatever its case', async t => {
  const app = await build(t)
  t.equal((await signUp(app, signUpBody({ username: 'taken', email: 'taken@example.com' }))).statusCode, 201)
  const sameName = await signUp(app, signUpBody({ username: ' TAKEN ' }))
  t.equal(sameName.statusCode, 409)
  t.equal(json(sameName).code, 'Conflict')
  t.equal(json(sameName).detail, 'this username is already taken')
  const sameEmail = await signUp(app, signUpBody({ email: 'Taken@Example.com' }))
  t.equal(sameEmail.statusCode, 409)
  t.equal(json(sameEmail).detail, 'this e-mail address is already taken')
  const count = await app.db
    .selectFrom('user')
    .select(eb => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  t.equal(Number(count.n), 1, 'nothing else was created')
})

t.test('two concurrent sign-ups for one username: exactly one wins', async t => {
  const app = await build(t)
  const results = await Promise.all([1, 2, 3].map(i => signUp(app, signUpBody({ username: 'racer', email: `racer${i}@example.com` }))))
  t.same(results.map(r => r.statusCode).sort(), [201, 409, 409])
})

t.test('an Idempotency-Key retry of a sign-up answers the first response and creates nothing', async t => {
  const app = await build(t)
  const body = signUpBody()
  const first = await signUp(app, body, { 'idempotency-key': 'signup-1' })
  const again = await signUp(app, body, { 'idempotency-key': 'signup-1' })
  t.equal(first.statusCode, 201)
  t.equal(again.statusCode, 201)
  t.equal(again.body, first.body)
  t.equal(again.headers.location, first.headers.location)
})

t.test('GET /v1/profiles/{profileId}', async t => {
  const app = await build(t)
  const user = await createUser(app, { firstName: 'Grace', lastName: 'Hopper' })

  t.test('answers the public profile with an ETag, and 304 for If-None-Match', async t => {
    const res = await app.inject({ method: 'GET', url: `/v1/profiles/${user.id}` })
    t.equal(res.statusCode, 200)
    t.same(Object.keys(json(res)).sort(), [
      'age',
      'avatar_url',
      'created_at',
      'favorite_band',
      'first_name',
      'id',
      'is_creator',
      'last_name',
      'updated_at',
      'username',
      'website'
    ])
    t.match(json(res), { id: user.id, username: user.username, first_name: 'Grace', last_name: 'Hopper', is_creator: false })
    t.ok(res.headers.etag)
    const cached = await app.inject({ method: 'GET', url: `/v1/profiles/${user.id}`, headers: { 'if-none-match': res.headers.etag as string } })
    t.equal(cached.statusCode, 304)
  })

  t.test('is public: a token is not needed', async t => {
    t.equal((await app.inject({ method: 'GET', url: `/v1/profiles/${user.id}` })).statusCode, 200)
  })

  t.test('404 ProfileNotFound for an unknown id', async t => {
    const res = await app.inject({ method: 'GET', url: '/v1/profiles/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10' })
    t.equal(res.statusCode, 404)
    t.equal(json(res).code, 'ProfileNotFound')
  })

  t.test('422 for a malformed id', async t => {
    const res = await app.inject({ method: 'GET', url: '/v1/profiles/not-a-uuid' })
    t.equal(res.statusCode, 422)
    t.same(
      json(res).errors.map((e: { in: string; field: string }) => [e.in, e.field]),
      [['path', '/profileId']]
    )
  })
})

t.test('GET /v1/profiles/me', async t => {
  const app = await build(t)
  const user = await createUser(app)

  t.test("answers the caller's profile with the e-mail (`me` wins over {profileId})", async t => {
    const res = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: user.headers })
    t.equal(res.statusCode, 200)
    t.match(json(res), { id: user.id, username: user.username, email: user.email })
    t.ok(res.headers.etag)
  })

  t.test('401 NotAuthenticated without a token', async t => {
    const res = await app.inject({ method: 'GET', url: '/v1/profiles/me' })
    t.equal(res.statusCode, 401)
    t.equal(json(res).code, 'NotAuthenticated')
    t.equal(res.headers['www-authenticate'], 'Bearer')
  })

  t.test('401 InvalidCredentials with a bad token', async t => {
    const res = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: { authorization: 'Bearer a.b.c' } })
    t.equal(res.statusCode, 401)
    t.equal(json(res).code, 'InvalidCredentials')
  })

  t.test('403 UserIsBanned for a banned user', async t => {
    const banned = await createUser(app, { active: false })
    const res = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: banned.headers })
    t.equal(res.statusCode, 403)
    t.equal(json(res).code, 'UserIsBanned')
  })
})

t.test('PUT /v1/profiles/me', async t => {
  const app = await build(t)
  const put = (headers: Record<string, string>, payload: Record<string, unknown>) =>
    app.inject({ method: 'PUT', url: '/v1/profiles/me', headers, payload })

  t.test('replaces the writable fields and answers the profile', async t => {
    const user = await createUser(app, { lastName: 'Before' })
    const res = await put(user.headers, {
      first_name: 'After',
      age: 40,
      favorite_band: 'ABBA',
      website: 'http://me.example.com',
      avatar_url: ALLOWED_AVATAR
    })
    t.equal(res.statusCode, 200)
    t.match(json(res), {
      id: user.id,
      first_name: 'After',
      last_name: null,
      age: 40,
      favorite_band: 'ABBA',
      website: 'http://me.example.com',
      avatar_url: ALLOWED_AVATAR
    })
    t.ok(res.headers.etag)
    const read = json(await app.inject({ method: 'GET', url: `/v1/profiles/${user.id}` }))
    t.equal(read.first_name, 'After')
    t.equal(read.last_name, null, 'an absent optional field is cleared')
    const cleared = await put(user.headers, { first_name: 'After', avatar_url: null, age: null })
    t.equal(cleared.statusCode, 200)
    t.match(json(cleared), { avatar_url: null, age: null })
  })

  t.test('avatar_url on a foreign host fails with the host rule message', async t => {
    const user = await createUser(app)
    for (const url of ['https://evil.example.com/a.png', 'http://127.0.0.1:3001/a.png', 'javascript:alert(1)', 'not a url']) {
      const res = await put(user.headers, { first_name: 'X', avatar_url: url })
      t.equal(res.statusCode, 422, url)
      t.same(json(res).errors, [{ in: 'body', field: '/avatar_url', rule: 'format', message: HOST_RULE }])
    }
  })

  t.test('first_name and age boundaries apply here too', async t => {
    const user = await createUser(app)
    t.equal((await put(user.headers, { first_name: '' })).statusCode, 422)
    t.equal((await put(user.headers, { first_name: 'a'.repeat(129) })).statusCode, 422)
    t.equal((await put(user.headers, { first_name: 'a'.repeat(128) })).statusCode, 200)
    t.equal((await put(user.headers, { first_name: 'A', age: 17 })).statusCode, 422)
    t.equal((await put(user.headers, { first_name: 'A', age: 18 })).statusCode, 200)
    t.equal((await put(user.headers, { first_name: 'A', username: 'other' })).statusCode, 422, 'username is not writable')
    t.equal((await put(user.headers, { first_name: 'A', email: 'x@example.com' })).statusCode, 422, 'email is not writable here')
  })

  t.test('a stale If-Match is 412 and changes nothing; the current one works', async t => {
    const user = await createUser(app, { firstName: 'Kept' })
    const current = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: user.headers })
    const stale = await put({ ...user.headers, 'if-match': '"stale"' }, { first_name: 'Changed' })
    t.equal(stale.statusCode, 412)
    t.equal(json(stale).code, 'PreconditionFailed')
    t.equal(json(await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: user.headers })).first_name, 'Kept')
    const fresh = await put({ ...user.headers, 'if-match': current.headers.etag as string }, { first_name: 'Changed' })
    t.equal(fresh.statusCode, 200)
  })

  t.test('401 without a token, 403 for a banned user', async t => {
    t.equal((await put({}, { first_name: 'X' })).statusCode, 401)
    const banned = await createUser(app, { active: false })
    const res = await put(banned.headers, { first_name: 'X' })
    t.equal(res.statusCode, 403)
    t.equal(json(res).code, 'UserIsBanned')
  })
})

t.test('the OpenAPI document declares the bearer scheme and every error of these routes', async t => {
  const app = await build(t)
  const doc = app.openapi('v1')
  t.ok(doc.components.securitySchemes.bearerAuth)
  const me = doc.paths['/v1/profiles/me']
  t.same(me.get.security, [{ bearerAuth: [] }])
  const has = (responses: Record<string, unknown>, statuses: string[]) =>
    t.same(
      statuses.filter(s => !(s in responses)),
      [],
      `declares ${statuses.join(', ')}`
    )
  has(me.put.responses, ['200', '401', '403', '412', '422'])
  has(me.get.responses, ['200', '304', '401', '403'])
  has(doc.paths['/v1/profiles'].post.responses, ['201', '409', '422'])
  has(doc.paths['/v1/profiles/{profileId}'].get.responses, ['200', '304', '404', '422'])
  t.match(me.get.responses['401'].description, /NotAuthenticated/)
  t.match(me.get.responses['401'].description, /InvalidCredentials/)
  t.match(me.get.responses['403'].description, /UserIsBanned/)
})

t.test('no password or hash in any log line of sign-up, accepted or refused', async t => {
  const logs: string[] = []
  const app = await build(t, { logs })
  t.equal((await signUp(app, signUpBody({ password: 'sekrit-pass-12' }))).statusCode, 201)
  t.equal((await signUp(app, signUpBody({ password: 'sekrit-pass' }))).statusCode, 422)
  t.equal((await signUp(app, signUpBody({ password: 'sekrit-pass-13', age: 17 }))).statusCode, 422)
  const text = logs.join('\n')
  t.ok(text.length > 0, 'the requests were logged')
  t.notOk(text.includes('sekrit'), 'no password')
  t.notOk(text.includes('scrypt$'), 'no password hash')
})
