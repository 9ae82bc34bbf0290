/**
 * The security matrix: the cross-cutting view over every route of the live OpenAPI document.
 * Resource tests cover their own routes in detail; this file makes sure no route slips
 * through: JWT attacks, token in URL, CORS, body limits, content types, SQL metacharacters in
 * every filter and sort, path traversal in ids, mass assignment, broken object level
 * authorisation (derived from the route table: a new owned route without an entry fails), rate limits.
 */
import { createHmac, randomUUID } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, json, TEST_SECRET } from './helper.js'
import { createCreator, createUser, verifyEmail, type TestUser } from './fixtures.js'
import { Gen, operationsOf, seed, type Operation, type Schema } from './contract.js'

const TABLES = [
  'user',
  'profile',
  'post',
  'post_tag',
  'review',
  'comment',
  'alert',
  'outbox_message',
  'idempotency_key',
  'media',
  'shop',
  'product',
  'chapter',
  'lesson',
  'class',
  'student'
] as const
const SQL_PAYLOADS = [
  "' OR 1=1 --",
  "'; drop table post; --",
  ';drop table post',
  '" OR ""="',
  '1\' UNION SELECT password_hash FROM "user" --',
  '%',
  '_',
  '\\',
  "') OR ('a'='a",
  '1; select pg_sleep(1)',
  "ARTICLE' OR '1'='1",
  '-created_at;drop table post',
  'title desc, (select 1)'
]

/**
 * Who may call an authenticated operation that names a resource by id, when the resource is not
 * theirs: 'owner' (someone else gets 403 UserNotOwner or a 404 that hides it) or 'anyone' (by design).
 * Every such operation of the document must be listed: a new route without an entry fails the matrix.
 */
const OWNERSHIP: Record<string, 'owner' | 'anyone'> = {
  updatePost: 'owner',
  patchPost: 'owner',
  deletePost: 'owner',
  createReview: 'anyone',
  createComment: 'anyone',
  updateComment: 'owner',
  patchComment: 'owner',
  deleteComment: 'owner',
  updateShop: 'owner',
  patchShop: 'owner',
  deleteShop: 'owner',
  createProduct: 'owner',
  updateProduct: 'owner',
  patchProduct: 'owner',
  deleteProduct: 'owner',
  getAlert: 'owner',
  resendAlert: 'owner',
  sendAccountSummary: 'owner',
  sendVerificationEmail: 'owner',
  getUserPost: 'owner',
  createChapter: 'owner',
  createLesson: 'owner',
  createStudent: 'owner',
  listStudents: 'owner',
  getStudent: 'owner',
  getClass: 'anyone', // a class is public; its students are not
  updateClass: 'owner',
  patchClass: 'owner',
  deleteClass: 'owner',
  updateStudent: 'owner',
  patchStudent: 'owner',
  deleteStudent: 'owner',
  updateChapter: 'owner',
  patchChapter: 'owner',
  deleteChapter: 'owner',
  updateLesson: 'owner',
  patchLesson: 'owner',
  deleteLesson: 'owner',
  updateReview: 'owner',
  patchReview: 'owner',
  deleteReview: 'owner',
  deleteMedia: 'owner'
}

function b64 (value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')
}
function jwt (header: object, payload: object, secret = TEST_SECRET, hash = 'sha256'): string {
  const head = `${b64(header)}.${b64(payload)}`
  return `${head}.${createHmac(hash, secret).update(head).digest('base64url')}`
}
const now = () => Math.floor(Date.now() / 1000)
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

async function counts (app: FastifyInstance): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const table of TABLES) {
    const row = await app.db
      .selectFrom(table)
      .select(eb => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    out[table] = Number(row.n)
  }
  return out
}

/** Operations that take a bearer token: required, or optional (`[{}, {bearerAuth}]`: a sent token is checked). */
function authenticatedOps (app: FastifyInstance): Operation[] {
  return (['v1', 'v2'] as const).flatMap(v => operationsOf(app.openapi(v), v)).filter(o => o.op.security?.length)
}

/** Operations that require a token (no anonymous `{}` alternative). */
const tokenRequired = (o: Operation) => !o.op.security.some((s: Record<string, unknown>) => Object.keys(s).length === 0)

t.test('JWT attacks are refused with 401 InvalidCredentials on every authenticated operation', async t => {
  const app = await build(t)
  const user = await createUser(app)
  const id = user.id
  const attacks: Record<string, string> = {
    'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ id, iat: now(), exp: now() + 600 })}.`,
    'alg none, signature kept': `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ id, iat: now(), exp: now() + 600 })}.${user.token.split('.')[2]}`,
    'alg None': jwt({ alg: 'None', typ: 'JWT' }, { id, exp: now() + 600 }),
    HS384: jwt({ alg: 'HS384', typ: 'JWT' }, { id, iat: now(), exp: now() + 600 }, TEST_SECRET, 'sha384'),
    HS512: jwt({ alg: 'HS512', typ: 'JWT' }, { id, iat: now(), exp: now() + 600 }, TEST_SECRET, 'sha512'),
    'key confusion (RS256 header, HMAC with the secret)': jwt({ alg: 'RS256', typ: 'JWT' }, { id, iat: now(), exp: now() + 600 }),
    'ES256 header': jwt({ alg: 'ES256', typ: 'JWT' }, { id, exp: now() + 600 }),
    expired: jwt({ alg: 'HS256', typ: 'JWT' }, { id, iat: now() - 7200, exp: now() - 3600 }),
    'not yet valid (nbf)': jwt({ alg: 'HS256', typ: 'JWT' }, { id, iat: now(), nbf: now() + 3600, exp: now() + 7200 }),
    'tampered payload': `${user.token.split('.')[0]}.${b64({ id: randomUUID(), iat: now(), exp: now() + 600 })}.${user.token.split('.')[2]}`,
    'tampered signature': `${user.token.slice(0, -2)}${user.token.endsWith('AA') ? 'BB' : 'AA'}`,
    'other secret': jwt({ alg: 'HS256', typ: 'JWT' }, { id, exp: now() + 600 }, 'another-secret-that-is-32-bytes-long!!'),
    'unknown user': jwt({ alg: 'HS256', typ: 'JWT' }, { id: randomUUID(), iat: now(), exp: now() + 600 }),
    'id not a string': jwt({ alg: 'HS256', typ: 'JWT' }, { id: 1, exp: now() + 600 }),
    'no id': jwt({ alg: 'HS256', typ: 'JWT' }, { sub: id, exp: now() + 600 }),
    'SQL in id': jwt({ alg: 'HS256', typ: 'JWT' }, { id: "' OR 1=1 --", exp: now() + 600 }),
    'kid path traversal': jwt({ alg: 'HS256', typ: 'JWT', kid: '../../dev/null' }, { id, exp: now() + 600 }, ''),
    'jku header': jwt({ alg: 'HS256', typ: 'JWT', jku: 'https://evil.example/keys' }, { id, exp: now() + 600 }, ''),
    garbage: 'not.a.jwt'
  }
  // the genuine token works, so each refusal below is the attack's doing
  t.equal((await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: user.headers })).statusCode, 200)
  const ops = authenticatedOps(app)
  t.ok(ops.length > 0, 'the document has authenticated operations')
  const accepted: string[] = []
  for (const [name, token] of Object.entries(attacks)) {
    for (const { method, path } of ops) {
      const url = path.replace(/\{\w+\}/g, randomUUID())
      const res = await app.inject({ method: method as 'GET', url, headers: bearer(token) })
      if (res.statusCode !== 401 || json(res).code !== 'InvalidCredentials') {
        accepted.push(`${name}: ${method} ${path} answered ${res.statusCode} ${res.body.slice(0, 200)}`)
      }
    }
  }
  t.same(accepted, [], `${Object.keys(attacks).length} attacks: 401 InvalidCredentials on all ${ops.length} operations`)
  const malformed: string[] = []
  for (const header of [`Basic ${user.token}`, `Token ${user.token}`, `Bearer ${user.token} x`, user.token]) {
    const res = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: { authorization: header } })
    if (res.statusCode !== 401) malformed.push(`Authorization: ${header.slice(0, 12)}… answered ${res.statusCode}`)
  }
  t.same(malformed, [], 'an Authorization header that is not `Bearer <token>` is refused with 401')
})

t.test('a token in the URL is refused with 400 TokenInQuery on every operation', async t => {
  const app = await build(t)
  const user = await createUser(app)
  const ops = (['v1', 'v2'] as const).flatMap(v => operationsOf(app.openapi(v), v))
  const keys = ['access_token', 'token', 'Access_Token', ' token']
  const accepted: string[] = []
  for (const key of keys) {
    for (const { method, path } of ops) {
      const url = `${path.replace(/\{\w+\}/g, randomUUID())}?${encodeURIComponent(key)}=${user.token}`
      const res = await app.inject({ method: method as 'GET', url, headers: user.headers })
      if (res.statusCode !== 400 || json(res).code !== 'TokenInQuery') accepted.push(`?${key}=: ${method} ${path} answered ${res.statusCode}`)
    }
  }
  t.same(accepted, [], `${keys.map(k => `?${k}=`).join(', ')} refused on all ${ops.length} operations`)
})

t.test('a token parameter is found in any position and spelling the decoder reads as one, and only then', async t => {
  const app = await build(t)
  // raw query strings: escapes and `+` (a space) decode to the name, leading and trailing spaces are trimmed
  const missed: string[] = []
  for (const query of ['limit=1&token=x', 'to%6Ben=x', 'TOKEN=x', 'token+=x', '%20access_token=x', 'offset=0&access%5Ftoken=x&limit=1', '?token=x']) {
    const res = await app.inject({ method: 'GET', url: `/v1/posts?${query}` })
    if (res.statusCode !== 400 || json(res).code !== 'TokenInQuery') missed.push(`?${query} answered ${res.statusCode} ${json(res).code}`)
  }
  t.same(missed, [], 'every spelling of a token parameter is refused with 400 TokenInQuery')
  const mistaken: string[] = []
  for (const query of ['tokens=x', 'my_token=x', 'to_ken=x', 'limit=1&q=token']) {
    const res = await app.inject({ method: 'GET', url: `/v1/posts?${query}` })
    if (json(res).code === 'TokenInQuery') mistaken.push(`?${query}`)
  }
  t.same(mistaken, [], 'a parameter that only looks like one is no token parameter')
})

t.test('CORS: allowed origins get their origin back, foreign ones nothing, credentials never', async t => {
  const app = await build(t, { env: { ALLOWED_CORS_ORIGINS: 'https://app.example,https://admin.example' } })
  // each answer's CORS headers, as `origin, allow-credentials`
  const cors = (res: { headers: Record<string, unknown> }) =>
    `${String(res.headers['access-control-allow-origin'])}, ${String(res.headers['access-control-allow-credentials'])}`
  const allowed: string[] = []
  for (const origin of ['https://app.example', 'https://admin.example']) {
    const pre = await app.inject({
      method: 'OPTIONS',
      url: '/v1/posts',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' }
    })
    const get = await app.inject({ method: 'GET', url: '/version', headers: { origin, cookie: 'session=1' } })
    allowed.push(`${origin} preflight: ${cors(pre)}`, `${origin} read: ${cors(get)}`)
  }
  t.same(
    allowed,
    ['https://app.example', 'https://admin.example'].flatMap(o => [`${o} preflight: ${o}, undefined`, `${o} read: ${o}, undefined`]),
    'allowed origins get their origin back, on preflights and reads, and never credentials'
  )
  const foreign: string[] = []
  for (const origin of ['https://evil.example', 'https://app.example.evil.example', 'null', 'http://app.example', 'https://APP.example.']) {
    const pre = await app.inject({ method: 'OPTIONS', url: '/v1/posts', headers: { origin, 'access-control-request-method': 'POST' } })
    const get = await app.inject({ method: 'GET', url: '/version', headers: { origin } })
    if (pre.headers['access-control-allow-origin'] !== undefined) foreign.push(`${origin} preflight: ${cors(pre)}`)
    if (get.headers['access-control-allow-origin'] !== undefined || get.headers['access-control-allow-credentials'] !== undefined) { foreign.push(`${origin} read: ${cors(get)}`) }
  }
  t.same(foreign, [], 'foreign origins get no allow-origin and no credentials')

  const wildcard = await build(t, { env: { ALLOWED_CORS_ORIGINS: '*' } })
  const res = await wildcard.inject({
    method: 'OPTIONS',
    url: '/v1/posts',
    headers: { origin: 'https://any.example', 'access-control-request-method': 'GET', cookie: 'a=b' }
  })
  t.equal(res.headers['access-control-allow-origin'], '*')
  t.equal(res.headers['access-control-allow-credentials'], undefined, '* never with credentials')

  const none = await build(t)
  const closed = await none.inject({ method: 'GET', url: '/version', headers: { origin: 'https://app.example' } })
  t.equal(closed.headers['access-control-allow-origin'], undefined, 'no origins configured: no CORS')
})

t.test('bodies over BODY_LIMIT_BYTES get 413 on every operation that takes one, and odd content types 415', async t => {
  const app = await build(t, { env: { BODY_LIMIT_BYTES: '2048' } })
  const creator = await createCreator(app)
  const ops = (['v1', 'v2'] as const).flatMap(v => operationsOf(app.openapi(v), v)).filter(o => o.op.requestBody)
  t.ok(ops.length > 0)
  const before = await counts(app)
  const tooBig: string[] = []
  const oddTypes: string[] = []
  for (const { method, path } of ops) {
    const url = path.replace(/\{\w+\}/g, randomUUID())
    const big = await app.inject({
      method: method as 'POST',
      url,
      headers: { ...creator.headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ title: 'x'.repeat(4096) })
    })
    if (big.statusCode !== 413 || json(big).code !== 'PayloadTooLarge') tooBig.push(`${method} ${path}: ${big.statusCode} ${json(big).code}`)
    for (const type of [
      'text/plain',
      'application/xml',
      'application/json\tx',
      ' application/json',
      'application/json ;',
      'text/html; charset=utf-8'
    ]) {
      const odd = await app.inject({ method: method as 'POST', url, headers: { ...creator.headers, 'content-type': type }, payload: '{"title":"x"}' })
      if (odd.statusCode !== 415) oddTypes.push(`${method} ${path} with ${JSON.stringify(type)}: ${odd.statusCode}`)
    }
  }
  t.same(tooBig, [], `413 PayloadTooLarge on all ${ops.length} operations`)
  t.same(oddTypes, [], 'odd content types get 415 on all of them')
  t.same(await counts(app), before, 'nothing was written')
})

t.test('SQL metacharacters in every filter and sort: 422 or a normal answer, never 5xx, tables intact', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const user = await createUser(app)
  const doc = app.openapi('v1')
  await seed(app, doc, new Gen(doc.components?.schemas ?? {}), creator, user)
  const before = await counts(app)
  let probes = 0
  const wrong: string[] = []
  const ops = (['v1', 'v2'] as const).flatMap(v => operationsOf(app.openapi(v), v)).filter(o => o.method === 'GET')
  for (const { path, op } of ops) {
    const filters = (op.parameters ?? []).filter((p: Schema) => p.in === 'query' && p.name !== 'limit' && p.name !== 'offset')
    for (const param of filters) {
      for (const payload of SQL_PAYLOADS) {
        const url = `${path.replace(/\{\w+\}/g, randomUUID())}?${param.name}=${encodeURIComponent(payload)}`
        const res = await app.inject({ method: 'GET', url, headers: creator.headers })
        probes++
        if (res.statusCode >= 500 || ![200, 404, 422].includes(res.statusCode)) wrong.push(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
        if (res.statusCode === 200) {
          // a match here would mean the payload widened the query: the payloads match no data
          const list = Object.values<unknown>(json(res)).find(Array.isArray) as unknown[] | undefined
          if (list && list.length > 0 && param.name !== 'sort') wrong.push(`${url} matched ${list.length} rows`)
        }
      }
    }
  }
  t.ok(probes > 0, `${probes} probes sent`)
  t.same(wrong, [], 'each answered 200 with no rows, 404 or 422')
  t.same(await counts(app), before, 'every table is still there with the same rows')
})

t.test('path traversal and malformed ids in every path parameter: 422, never a file or a 5xx', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const ops = (['v1', 'v2'] as const).flatMap(v => operationsOf(app.openapi(v), v)).filter(o => o.path.includes('{'))
  const wrong: string[] = []
  for (const { method, path } of ops) {
    for (const id of [
      '..%2F..%2Fetc%2Fpasswd',
      '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '..%5C..%5Cwindows',
      '%252e%252e%252f',
      '%00',
      '%E0%A4%A',
      'x'.repeat(300)
    ]) {
      const url = path.replace(/\{\w+\}/, id).replace(/\{\w+\}/g, randomUUID())
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: { ...creator.headers, ...(method === 'GET' || method === 'DELETE' ? {} : { 'content-type': 'application/json' }) },
        payload: method === 'GET' || method === 'DELETE' ? undefined : '{}'
      })
      if (res.statusCode !== 422 || !/problem\+json/.test(String(res.headers['content-type']))) {
        wrong.push(`${method} ${url}: ${res.statusCode} ${res.body.slice(0, 160)}`)
      }
    }
  }
  t.same(wrong, [], `${ops.length} operations with path parameters refuse traversal with a 422 problem`)
  const res = await app.inject({ method: 'GET', url: '/v1/media/..%2F..%2F..%2Fetc%2Fpasswd', headers: { accept: '*/*' } })
  t.equal(res.statusCode, 422)
  t.notMatch(res.body, /root:/)
})

t.test('mass assignment: owner, role and id fields in any body are refused with 422', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const user = await createUser(app)
  const ops = (['v1', 'v2'] as const).flatMap(v => operationsOf(app.openapi(v), v)).filter(o => o.op.requestBody)
  const assigned: string[] = []
  for (const { method, path, op } of ops) {
    const url = path.replace(/\{\w+\}/g, randomUUID())
    for (const field of ['is_creator', 'is_active', 'creator_id', 'owner_id', 'author_id', 'user_id', 'id', 'password_hash', 'created_at']) {
      const who = op.operationId === 'createProfile' || op.operationId === 'createToken' ? {} : creator.headers
      const res = await app.inject({ method: method as 'POST', url, headers: who, payload: { [field]: field.startsWith('is_') ? true : user.id } })
      const body = json(res)
      if (
        res.statusCode !== 422 ||
        !(body.errors ?? []).some((e: { field: string; rule: string }) => e.field === `/${field}` && e.rule === 'additionalProperties')
      ) {
        assigned.push(`${method} ${path} with ${field}: ${res.statusCode} ${res.body.slice(0, 200)}`)
      }
    }
  }
  t.same(assigned, [], `${ops.length} operations refuse unknown properties`)
  const me = await app.inject({
    method: 'PUT',
    url: '/v1/profiles/me',
    headers: user.headers,
    payload: { first_name: 'Eve', is_creator: true, is_active: true }
  })
  t.equal(me.statusCode, 422)
  const row = await app.db.selectFrom('user').select(['is_creator']).where('id', '=', user.id).executeTakeFirstOrThrow()
  t.notOk(row.is_creator, 'still not a creator')
})

t.test('broken object level authorisation: another user can neither read nor change what is not theirs', async t => {
  const app = await build(t)
  const owner = await createCreator(app)
  const other = await createCreator(app) // a creator too, so that UserNotCreator cannot mask the ownership check
  const doc = app.openapi('v1')
  const gen = new Gen(doc.components?.schemas ?? {})
  const ids = await seed(app, doc, gen, owner, owner)
  ids.profileId = [owner.id]
  ids.userId = [owner.id]
  await reviewAndHarvestAlerts(app, ids, owner, other)
  // what the generic seed cannot reach: a lesson (its item lives at /v1/lessons) and an upload (multipart)
  const lesson = await app.inject({
    method: 'POST',
    url: `/v1/courses/${ids.courseId[0]}/chapters/${ids.chapterId[0]}/lessons`,
    headers: owner.headers,
    payload: { title: 'A lesson' }
  })
  ids.lessonId = [json(lesson).id]
  await verifyEmail(app, owner)
  const boundary = 'bola-boundary'
  const upload = await app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...owner.headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nowner's bytes\r\n--${boundary}--\r\n`
  })
  ids.mediaId = [json(upload).id]

  const owned = authenticatedOps(app).filter(o => tokenRequired(o) && o.path.includes('{'))
  const unlisted = owned.filter(o => !OWNERSHIP[o.op.operationId])
  t.same(
    unlisted.map(o => `${o.method} ${o.path} (${o.op.operationId})`),
    [],
    'every authenticated operation on an id has an ownership entry here'
  )

  const before = await counts(app)
  const broken: string[] = []
  let attacked = 0
  for (const { method, path, op } of owned) {
    if (OWNERSHIP[op.operationId] !== 'owner') continue
    attacked++
    const names = [...path.matchAll(/\{(\w+)\}/g)].map(m => m[1])
    const missing = names.filter(n => !ids[n]?.length)
    if (missing.length > 0) {
      broken.push(`${method} ${path}: no seeded ${missing.join(', ')} to attack`)
      continue
    }
    const url = path.replace(/\{(\w+)\}/g, (_m, n: string) => ids[n][0])
    const schema = op.requestBody?.content?.['application/json']?.schema
    const bodies = schema ? fc.sample(gen.valid(schema, true), { numRuns: 8, seed: 7 }) : [undefined]
    let answered = false
    for (const body of bodies) {
      const res = await app.inject({
        method: method as 'POST',
        url,
        headers: other.headers,
        ...(body === undefined ? {} : { payload: body as object })
      })
      if (res.statusCode === 422) continue // this sample broke a rule: try another
      answered = true
      const code = json(res).code as string
      if (!(res.statusCode === 403 ? code === 'UserNotOwner' : res.statusCode === 404 && /NotFound/.test(code))) {
        broken.push(`${method} ${path} by another user: ${res.statusCode} ${code}`)
      }
      break
    }
    if (!answered) broken.push(`${method} ${path}: no generated body passed validation, ownership untested`)
  }
  t.ok(attacked > 0, `${attacked} owner-only operations attacked`)
  t.same(broken, [], 'each answered another user 403 UserNotOwner or a 404 that hides the resource')
  t.same(await counts(app), before, 'nothing was created, changed away or deleted')
})

t.test('rate limits answer 429 RateLimited with Retry-After', async t => {
  const app = await build(t, { env: { RATE_LIMIT_MAX: '3', AUTH_RATE_LIMIT_MAX: '2' } })
  const statuses: number[] = []
  let last
  for (let i = 0; i < 5; i++) {
    last = await app.inject({ method: 'GET', url: '/version' })
    statuses.push(last.statusCode)
  }
  t.same(statuses, [200, 200, 200, 429, 429])
  t.equal(json(last!).code, 'RateLimited')
  t.match(last!.headers['retry-after'], /^\d+$/)
  t.match(last!.headers['content-type'], /application\/problem\+json/)
  const health = await app.inject({ method: 'GET', url: '/health' })
  t.equal(health.statusCode, 200, '/health is never rate limited')

  const auth = await build(t, { env: { AUTH_RATE_LIMIT_MAX: '2' } })
  const user = await createUser(auth)
  const tries = []
  for (let i = 0; i < 4; i++) {
    tries.push(
      (await auth.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: user.username, password: 'wrong password!!' } })).statusCode
    )
  }
  t.same(tries, [401, 401, 429, 429], 'password guessing is slowed down')
})

/** The other user reviews the owner's posts, so that the owner has alerts to attack. */
async function reviewAndHarvestAlerts (app: FastifyInstance, ids: Record<string, string[]>, owner: TestUser, other: TestUser) {
  // a post published now (the seeded ones may be drafts or scheduled)
  const post = await app.inject({ method: 'POST', url: '/v1/posts', headers: owner.headers, payload: { title: 'Alert bait', type: 'ARTICLE' } })
  if (post.statusCode !== 201) return
  const postId = json(post).id as string
  ids.postId = [postId, ...(ids.postId ?? [])]
  await app.inject({ method: 'POST', url: `/v1/posts/${postId}/reviews`, headers: other.headers, payload: { rating: 4, text: 'fine' } })
  await app.inject({ method: 'POST', url: `/v1/posts/${postId}/comments`, headers: other.headers, payload: { text: 'nice' } })
  const alerts = await app.inject({ method: 'GET', url: '/v1/alerts', headers: owner.headers })
  if (alerts.statusCode === 200) ids.alertId = json(alerts).alerts.map((a: { id: string }) => a.id)
}
