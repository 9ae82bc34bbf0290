import { connect, type AddressInfo } from 'node:net'
import { Type } from '../../schemas/typebox.js'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import config from '../../plugins/config.js'
import contentType from '../../plugins/content-type.js'
import problems from '../../plugins/problems.js'
import { AppError } from '../../schemas/problems.js'
import { PUBLIC_BODY_LIMIT } from '../../src/routes/guards.js'
import { MAX_JSON_MEMBERS, MAX_JSON_VALUES, shapeFault } from '../../plugins/json-shape.js'
import { build, json, testConfig, testFastify, whileMigrating } from '../helper.js'
import { createCreator } from '../fixtures.js'

const ID = '3b241101-e2bb-4255-8caf-4136c566a962'
const BASE = 'https://problems.example.test/p'
const SECRET = 'password=hunter2 host=db.internal:5432'

/** A bare Fastify with the options factory and the error plugins alone, plus tiny routes for each error class. */
async function bare (t: Test): Promise<FastifyInstance> {
  const cfg = testConfig({ BODY_LIMIT_BYTES: '2048', PROBLEM_BASE_URI: `${BASE}/` })
  const app = testFastify(cfg)
  await app.register(config, { config: cfg })
  await app.register(problems)
  await app.register(contentType)
  app.post(
    '/things/:thingId',
    {
      schema: {
        params: Type.Object({ thingId: Type.String({ format: 'uuid' }) }, { additionalProperties: false }),
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })) }, { additionalProperties: false }),
        headers: Type.Object({ 'x-tenant': Type.Optional(Type.String({ minLength: 3 })) }),
        body: Type.Object({ name: Type.String({ minLength: 2 }) }, { additionalProperties: false })
      }
    },
    async request => ({ ok: true, body: request.body })
  )
  app.get('/boom', async () => {
    throw new Error(SECRET)
  })
  app.get('/boom-status', async () => {
    throw Object.assign(new Error(SECRET), { statusCode: 502 })
  })
  app.get('/picky', async () => {
    throw new AppError('NotAcceptable', 'only application/json here')
  })
  await whileMigrating(() => app.ready())
  t.teardown(() => app.close())
  return app
}

function post (app: FastifyInstance, url: string, payload: unknown, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url, payload: payload as string, headers: { 'content-type': 'application/json', ...headers } })
}

/** Every problem answer has the same shape. */
function assertProblem (
  t: Test,
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  code: string,
  instance: string
) {
  t.equal(res.statusCode, status, `status ${status}`)
  t.match(String(res.headers['content-type']), /^application\/problem\+json/, 'problem+json content type')
  const body = JSON.parse(res.body)
  const kebab = code.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()
  t.equal(body.type, `${BASE}/${kebab}`, 'type is PROBLEM_BASE_URI/kebab-code')
  t.equal(body.status, status)
  t.equal(body.code, code)
  t.equal(body.instance, instance, 'instance is the path without the query')
  t.type(body.title, 'string')
  t.ok(body.title.length > 0, 'has a title')
  t.type(body.detail, 'string')
  const allowed = ['type', 'title', 'status', 'detail', 'instance', 'code', 'errors']
  t.same(
    Object.keys(body).filter(k => !allowed.includes(k)),
    [],
    'no other members'
  )
  return body
}

t.test('a valid request passes the error plugins untouched', async t => {
  const app = await bare(t)
  const res = await post(app, `/things/${ID}?limit=5`, { name: 'ab' }, { 'x-tenant': 'acme' })
  t.equal(res.statusCode, 200)
  t.same(json(res), { ok: true, body: { name: 'ab' } })
})

t.test('validation failures are 422 ValidationFailed with errors[] naming where, what and which rule', async t => {
  const app = await bare(t)

  // [subtest, URL, body, headers, the errors[] expected]
  const cases: Array<[string, string, unknown, Record<string, string>, unknown[]]> = [
    [
      'body: a rule of a property',
      `/things/${ID}`,
      { name: 'a' },
      {},
      [{ in: 'body', field: '/name', rule: 'minLength', message: 'must be at least 2 characters long' }]
    ],
    ['body: a missing property', `/things/${ID}`, {}, {}, [{ in: 'body', field: '/name', rule: 'required', message: 'is required' }]],
    [
      'body: an unknown property is refused, never dropped',
      `/things/${ID}`,
      { name: 'ab', admin: true },
      {},
      [{ in: 'body', field: '/admin', rule: 'additionalProperties', message: 'is not a known property' }]
    ],
    [
      'body: a JSON value of the wrong type is not coerced',
      `/things/${ID}`,
      { name: 12 },
      {},
      [{ in: 'body', field: '/name', rule: 'type', message: 'must be a string' }]
    ],
    [
      'query: out of range',
      `/things/${ID}?limit=0`,
      { name: 'ab' },
      {},
      [{ in: 'query', field: '/limit', rule: 'minimum', message: 'must be 1 or more' }]
    ],
    [
      'query: an unknown parameter is refused',
      `/things/${ID}?colour=red`,
      { name: 'ab' },
      {},
      [{ in: 'query', field: '/colour', rule: 'additionalProperties', message: 'is not a known property' }]
    ],
    [
      'path: a malformed id is 422, not 404',
      '/things/not-a-uuid',
      { name: 'ab' },
      {},
      [
        {
          in: 'path',
          field: '/thingId',
          rule: 'format',
          message: 'must be a UUID such as 7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10'
        }
      ]
    ],
    [
      'header: a rule of a header',
      `/things/${ID}`,
      { name: 'ab' },
      { 'x-tenant': 'ab' },
      [{ in: 'header', field: '/x-tenant', rule: 'minLength', message: 'must be at least 3 characters long' }]
    ]
  ]
  for (const [name, url, payload, headers, errors] of cases) {
    t.test(name, async t => {
      const body = assertProblem(t, await post(app, url, payload, headers), 422, 'ValidationFailed', url.split('?')[0])
      t.same(body.errors, errors)
    })
  }

  t.test('body: every failing rule is listed, not only the first', async t => {
    const body = assertProblem(t, await post(app, `/things/${ID}`, { name: 'a', admin: true }), 422, 'ValidationFailed', `/things/${ID}`)
    t.same(body.errors.map((e: { field: string }) => e.field).sort(), ['/admin', '/name'])
  })

  t.test('query: the upper bound', async t => {
    t.equal((await post(app, `/things/${ID}?limit=100`, { name: 'ab' })).statusCode, 200)
    const body = assertProblem(t, await post(app, `/things/${ID}?limit=101`, { name: 'ab' }), 422, 'ValidationFailed', `/things/${ID}`)
    t.equal(body.errors[0].rule, 'maximum')
  })
})

t.test('a validation answer and its log line stay small whatever the input', async t => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'info' })
  const creator = await createCreator(app)
  const requestLine = () =>
    logs
      .map(l => ({ text: l, line: JSON.parse(l) as { msg: string } }))
      .filter(l => l.line.msg === 'request completed')
      .at(-1)?.text ?? ''
  const bounded = (res: LightMyRequestResponse, what: string) => {
    t.equal(res.statusCode, 422, what)
    t.ok(res.body.length < 16_384, `${what}: the answer is ${res.body.length} bytes, under 16 KB`)
    const line = requestLine()
    t.ok(line.length > 0 && line.length < 4096, `${what}: its log line is ${line.length} bytes, under 4 KB`)
    const body = json(res)
    t.ok(body.errors.length <= 20, `${what}: at most 20 issues (${body.errors.length})`)
    t.ok(body.detail.length <= 1100, `${what}: a bounded detail (${body.detail.length} characters)`)
    return body
  }

  // a post with MAX_JSON_MEMBERS members: parsed, and answered with its first issue only
  const post = { type: 'ARTICLE', title: 'T' }
  const members = (n: number) => JSON.stringify({ ...post, ...Object.fromEntries(Array.from({ length: n - 2 }, (_, i) => [`p${i}`, 1])) })
  const send = (payload: string) =>
    app.inject({ method: 'POST', url: '/v1/posts', payload, headers: { ...creator.headers, 'content-type': 'application/json' } })
  const many = bounded(await send(members(MAX_JSON_MEMBERS)), `${MAX_JSON_MEMBERS} members`)
  t.same(
    many.errors,
    [{ in: 'body', field: '/p0', rule: 'additionalProperties', message: 'is not a known property' }],
    'a body this large: its first issue'
  )
  t.match(many.detail, /checked up to its first issue\)$/, 'and the detail says so')
  // one member more is refused before parsing; so is 1 MB of them
  const over = await send(members(MAX_JSON_MEMBERS + 1))
  t.same(
    [over.statusCode, json(over).code, json(over).detail],
    [413, 'PayloadTooLarge', `a JSON body holds at most ${MAX_JSON_MEMBERS} object members`]
  )
  let properties = 0
  const padded: Record<string, unknown> = { ...post }
  for (let size = 100; size < 1_000_000; properties++) {
    const key = `p${properties}`
    padded[key] = 1
    size += key.length + 5
  }
  t.equal((await send(JSON.stringify(padded))).statusCode, 413, `${properties} members in 1 MB`)
  t.ok(requestLine().length < 4096, 'its log line is short')

  // a small body lists every issue, up to 20, and counts the rest
  const few = bounded(
    await app.inject({
      method: 'POST',
      url: '/v1/posts',
      headers: creator.headers,
      payload: { ...post, ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p${i}`, 1])) }
    }),
    '30 unknown properties'
  )
  t.equal(few.errors.length, 20)
  t.match(few.detail, /; and 10 more$/)

  // a post with 2,000 bad tags: checked up to the count rule; 100,000 of them are more values than any body holds
  const tags = Array.from({ length: 2_000 }, () => 'x!')
  const tagged = bounded(
    await app.inject({ method: 'POST', url: '/v1/posts', headers: creator.headers, payload: { type: 'ARTICLE', title: 'T', tags } }),
    '2,000 bad tags'
  )
  t.equal(tagged.errors[0].field, '/tags', 'the count rule comes first')
  t.equal(tagged.errors[0].rule, 'maxItems')
  const flood = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: creator.headers,
    payload: { type: 'ARTICLE', title: 'T', tags: Array.from({ length: 100_000 }, () => 'x!') }
  })
  t.same([flood.statusCode, json(flood).detail], [413, `a JSON body holds at most ${MAX_JSON_VALUES} values`], '100,000 tags: refused before parsing')

  // one unknown property whose name is 500 KB
  const name = 'k'.repeat(500_000)
  const long = bounded(
    await app.inject({ method: 'POST', url: '/v1/posts', headers: creator.headers, payload: { ...post, [name]: 1 } }),
    'a 500 KB property name'
  )
  t.ok(
    long.errors.every((e: { field: string }) => e.field.length <= 200),
    'field names are cut'
  )

  // a long URL of unknown parameters
  const url = `/v1/posts?${Array.from({ length: 600 }, (_, i) => `q${i}=1`).join('&')}`
  bounded(await app.inject({ method: 'GET', url }), `a ${url.length}-character query`)
})

t.test('the routes anyone may call take a body of PUBLIC_BODY_LIMIT bytes, and one more is 413', async t => {
  const app = await build(t)
  const person = { username: 'ada', email: 'ada@example.com', password: 'correct horse battery staple', first_name: 'Ada' }
  // valid JSON of exactly the limit: whitespace after the object
  const sized = (body: object, bytes: number) => JSON.stringify(body).padEnd(bytes, ' ')
  const send = (url: string, payload: string) => app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } })
  t.equal((await send('/v1/profiles', sized(person, PUBLIC_BODY_LIMIT))).statusCode, 201, 'sign-up at the limit')
  const wrong: string[] = []
  for (const [url, body] of [
    ['/v1/profiles', person],
    ['/v1/auth/token', { username: 'ada', password: 'x' }],
    ['/v1/email-verifications', { token: 'x' }]
  ] as const) {
    const res = await send(url, sized(body, PUBLIC_BODY_LIMIT + 1))
    if (res.statusCode !== 413 || json(res).code !== 'PayloadTooLarge') wrong.push(`${url}: ${res.statusCode}`)
  }
  t.same(wrong, [], 'one byte more is 413 PayloadTooLarge on each')
})

t.test('shapeFault reads depth, members, values and control escapes outside and inside strings', async t => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
  const cases: Array<[string, string | undefined]> = [
    ['{"a":1,"b":2}', undefined],
    [deep(32), undefined],
    [deep(33), 'depth'],
    [`{"a":${deep(31)}}`, undefined],
    [`{"a":${deep(32)}}`, 'depth'],
    [`"${'['.repeat(100)}"`, undefined],
    ['{"a":"x:y:z,[{"}', undefined],
    ['{"a":"q\\":1","b":2}', undefined],
    [`{${Array.from({ length: 10_000 }, (_, i) => `"k${i}":1`).join(',')}}`, undefined],
    [`{${Array.from({ length: 10_001 }, (_, i) => `"k${i}":1`).join(',')}}`, 'members'],
    [`[${Array(19_999).fill(1).join(',')}]`, undefined],
    [`[${Array(20_000).fill(1).join(',')}]`, 'values'],
    ['"tab\\tnew\\nline\\rreturn\\u0009\\u000a\\u000D"', undefined],
    ['"\\u0001"', 'control'],
    ['"\\u001F"', 'control'],
    ['"\\u001f"', 'control'],
    ['"\\b"', 'control'],
    ['"\\f"', 'control'],
    ['"\\u0020\\u007f\\u0100"', undefined],
    ['"\\\\u0001"', undefined],
    ['{"\\u0000":1}', 'control']
  ]
  t.same(
    cases
      .filter(([text, fault]) => shapeFault(text) !== fault)
      .map(([text, fault]) => `${text.slice(0, 40)}: ${String(shapeFault(text))}, not ${String(fault)}`),
    []
  )
})

t.test('a body that is not JSON is 400 MalformedBody', async t => {
  const app = await bare(t)
  const body = assertProblem(t, await post(app, `/things/${ID}`, '{"name": "ab"'), 400, 'MalformedBody', `/things/${ID}`)
  t.equal(body.errors, undefined, 'no errors[] outside validation')
})

t.test('an empty body that claims to be JSON is 400 MalformedBody', async t => {
  const app = await bare(t)
  assertProblem(t, await post(app, `/things/${ID}`, ''), 400, 'MalformedBody', `/things/${ID}`)
})

t.test('a JSON body with a __proto__ key is refused, not merged', async t => {
  const app = await bare(t)
  const res = await post(app, `/things/${ID}`, '{"name": "ab", "__proto__": {"admin": true}}')
  t.equal(res.statusCode, 400)
  t.equal(json(res).code, 'MalformedBody')
})

t.test('an unknown route is 404 NotFound', async t => {
  const app = await bare(t)
  const body = assertProblem(t, await app.inject({ method: 'GET', url: '/nowhere?x=1' }), 404, 'NotFound', '/nowhere')
  t.match(body.detail, 'GET /nowhere')
})

t.test('a known path with another method is 405 with Allow', async t => {
  const app = await bare(t)
  const res = await app.inject({ method: 'DELETE', url: `/things/${ID}` })
  assertProblem(t, res, 405, 'MethodNotAllowed', `/things/${ID}`)
  t.equal(res.headers.allow, 'POST')
  const get = await app.inject({ method: 'PUT', url: '/boom' })
  assertProblem(t, get, 405, 'MethodNotAllowed', '/boom')
  t.equal(get.headers.allow, 'GET, HEAD', 'the HEAD route Fastify adds for GET is allowed too')
})

t.test('a route that cannot satisfy Accept answers 406 NotAcceptable', async t => {
  const app = await bare(t)
  const body = assertProblem(t, await app.inject({ method: 'GET', url: '/picky', headers: { accept: 'image/png' } }), 406, 'NotAcceptable', '/picky')
  t.equal(body.detail, 'only application/json here')
})

t.test('a body over BODY_LIMIT_BYTES is 413 PayloadTooLarge', async t => {
  const app = await bare(t)
  const under = await post(app, `/things/${ID}`, JSON.stringify({ name: 'x'.repeat(2000) }))
  t.equal(under.statusCode, 200, 'just under the limit passes')
  assertProblem(t, await post(app, `/things/${ID}`, JSON.stringify({ name: 'x'.repeat(2100) })), 413, 'PayloadTooLarge', `/things/${ID}`)
})

t.test('a body of another media type is 415 UnsupportedMediaType', async t => {
  const app = await bare(t)
  const res = await post(app, `/things/${ID}`, 'name=ab', { 'content-type': 'application/xml' })
  assertProblem(t, res, 415, 'UnsupportedMediaType', `/things/${ID}`)
})

t.test('an unexpected failure is 500 InternalError and says nothing of the internals', async t => {
  const app = await bare(t)
  for (const url of ['/boom', '/boom-status']) {
    const res = await app.inject({ method: 'GET', url })
    const body = assertProblem(t, res, 500, 'InternalError', url)
    t.notMatch(res.body, /hunter2|db\.internal|5432|Error:|at /, `${url}: no message, host or stack`)
    t.equal(body.detail, 'the server failed to answer this request')
  }
})

t.test('the real app answers unknown routes 404 and wrong methods 405, CORS preflight route notwithstanding', async t => {
  const app = await build(t)
  const unknown = await app.inject({ method: 'GET', url: '/v1/nowhere/at-all' })
  t.equal(unknown.statusCode, 404)
  t.equal(json(unknown).code, 'NotFound')
  t.equal(unknown.headers.allow, undefined)
  const wrong = await app.inject({ method: 'DELETE', url: '/health' })
  t.equal(wrong.statusCode, 405)
  t.equal(json(wrong).code, 'MethodNotAllowed')
  t.match(wrong.headers.allow, /\bGET\b/)
  t.notMatch(wrong.headers.allow, /DELETE/)
})

/** Sends raw bytes on a new connection and reads everything until the server closes it. */
function rawExchange (port: number, bytes: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' })
    const chunks: Buffer[] = []
    socket.on('data', chunk => chunks.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const [head, ...rest] = text.split('\r\n\r\n')
      const [statusLine, ...lines] = head.split('\r\n')
      const headers = Object.fromEntries(lines.map(l => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') })
    })
    socket.write(bytes)
  })
}

t.test('HTTP that Node refuses before any route (bad request line, headers too large) is problem+json, then the connection closes', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  const base = app.config.PROBLEM_BASE_URI.replace(/\/+$/, '')
  const cases: Array<[string, string, number, string, string]> = [
    ['a garbage request line', 'GARBAGE\r\n\r\n', 400, 'MalformedRequest', '/'],
    ['an unknown HTTP version', 'GET /v1/posts HTTP/9.x\r\nHost: x\r\n\r\n', 400, 'MalformedRequest', '/'],
    ['a header without a colon', 'GET /v1/posts HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 400, 'MalformedRequest', '/v1/posts'],
    [
      'headers over the limit',
      `GET /v1/posts?limit=5 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
      431,
      'HeadersTooLarge',
      '/v1/posts'
    ]
  ]
  for (const [name, bytes, status, code, instance] of cases) {
    const res = await rawExchange(port, bytes)
    t.equal(res.status, status, name)
    t.equal(res.headers['content-type'], 'application/problem+json', name)
    t.equal(res.headers.connection, 'close', name)
    t.equal(Number(res.headers['content-length']), Buffer.byteLength(res.body), name)
    const body = JSON.parse(res.body)
    t.same(
      body,
      { type: `${base}/${code.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()}`, title: body.title, status, detail: body.detail, instance, code },
      name
    )
    t.ok(body.title && body.detail, `${name}: a title and a detail`)
  }
  // The other side: headers just under the limit are an ordinary request.
  const fits = await rawExchange(port, `GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: ${'a'.repeat(15 * 1024)}\r\n\r\n`)
  t.equal(fits.status, 200, 'headers under the limit are served')
})
