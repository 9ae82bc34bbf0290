import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { createCreator, createUser, PASSWORD } from './fixtures.js'
import { build, json } from './helper.js'

/**
 * No request costs more than a bounded slice of the server: an unknown route, a body nested a
 * million deep, a sort of two thousand terms, a 15 KB path. Each is answered, and its cost is the
 * CPU the server's process spent answering it: what other clients lose to it, and, unlike a timer
 * or the event loop's delay, the same on a quiet machine and on a loaded one.
 */

/** The most CPU one such request may take. Before: 1,000–2,000 ms. */
const BUDGET_MS = 150

/** Nested arrays of `bytes` characters: `[[[…]]]`. */
const nested = (bytes: number) => '['.repeat(bytes / 2) + ']'.repeat(bytes / 2)
const MiB = 1024 * 1024

/** The answer, and the CPU (user and system, every thread of the process) spent making it. */
async function timed (app: FastifyInstance, request: InjectOptions): Promise<{ res: LightMyRequestResponse; costMs: number }> {
  const before = process.cpuUsage()
  const res = await app.inject(request)
  const spent = process.cpuUsage(before)
  return { res, costMs: (spent.user + spent.system) / 1000 }
}

t.test('a nested body to an unknown route or method is 404/405 before it is read, within the budget', async t => {
  const app = await build(t)
  const payload = nested(MiB)
  const wrong: string[] = []
  for (const [method, url, status] of [
    ['POST', '/v1/nope', 404],
    ['DELETE', '/v1/nope', 404],
    ['PUT', '/health', 405],
    ['PATCH', '/v1/posts', 405],
    ['POST', '/v1/posts/x/y/z', 404]
  ] as const) {
    const { res, costMs } = await timed(app, { method, url, payload, headers: { 'content-type': 'application/json' } })
    if (res.statusCode !== status) wrong.push(`${method} ${url}: ${res.statusCode}, not ${status}`)
    if (res.headers.connection !== 'close') wrong.push(`${method} ${url}: the connection is kept to drain the body`)
    if (costMs > BUDGET_MS) wrong.push(`${method} ${url}: cost ${costMs.toFixed(0)} ms of CPU`)
  }
  t.same(wrong, [])
  const plain = await app.inject({ method: 'GET', url: '/v1/nope' })
  t.equal(plain.headers.connection, 'keep-alive', 'a 404 without a body keeps its connection')
})

t.test("a signed-in non-creator is 403 before the body is read; a creator's deep body is 413 from its shape", async t => {
  const app = await build(t)
  const user = await createUser(app)
  const creator = await createCreator(app)
  const payload = nested(MiB - 2)
  const headers = { 'content-type': 'application/json' }
  const refused = await timed(app, { method: 'POST', url: '/v1/posts', payload, headers: { ...user.headers, ...headers } })
  t.same([refused.res.statusCode, json(refused.res).code], [403, 'UserNotCreator'])
  t.ok(refused.costMs < BUDGET_MS, `cost ${refused.costMs.toFixed(0)} ms of CPU`)
  const deep = await timed(app, { method: 'POST', url: '/v1/posts', payload, headers: { ...creator.headers, ...headers } })
  t.same(
    [deep.res.statusCode, json(deep.res).code, json(deep.res).detail],
    [413, 'PayloadTooLarge', 'a JSON body nests at most 32 ' + 'levels of arrays and objects']
  )
  t.ok(deep.costMs < BUDGET_MS, `cost ${deep.costMs.toFixed(0)} ms of CPU`)
  const nobody = await timed(app, { method: 'POST', url: '/v1/posts', payload, headers })
  t.equal(nobody.res.statusCode, 401, 'no token: 401, nothing read')
  t.ok(nobody.costMs < BUDGET_MS)
})

t.test('sign-up and login with a 64 KiB nested body are 413, within the budget; 32 levels are parsed, 33 are not', async t => {
  const app = await build(t)
  const payload = nested(64 * 1024 - 2)
  for (const url of ['/v1/profiles', '/v1/auth/token']) {
    const { res, costMs } = await timed(app, { method: 'POST', url, payload, headers: { 'content-type': 'application/json' } })
    t.same([res.statusCode, json(res).code], [413, 'PayloadTooLarge'], url)
    t.ok(costMs < BUDGET_MS, `${url}: cost ${costMs.toFixed(0)} ms of CPU`)
  }
  const at = await app.inject({ method: 'POST', url: '/v1/auth/token', payload: nested(64), headers: { 'content-type': 'application/json' } })
  t.equal(at.statusCode, 422, '32 levels: parsed, then refused by the schema')
  const over = await app.inject({ method: 'POST', url: '/v1/auth/token', payload: nested(66), headers: { 'content-type': 'application/json' } })
  t.equal(over.statusCode, 413, '33 levels: refused before parsing')
})

t.test("each route reads at most what its schema can take: a body past a comment's limit is 413 unread", async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const post = json(await app.inject({ method: 'POST', url: '/v1/posts', headers: creator.headers, payload: { type: 'ARTICLE', title: 'T' } }))
  const url = `/v1/posts/${post.id}/comments`
  // the largest comment the schema takes, every character escaped, fits its limit
  const text = '\\u00e9'.repeat(10_000)
  const largest = await app.inject({
    method: 'POST',
    url,
    headers: { ...creator.headers, 'content-type': 'application/json' },
    payload: `{"text":"${text}"}`
  })
  t.equal(largest.statusCode, 201, 'the largest valid comment, escaped, is taken')
  const padded = `{"text":"x"}${' '.repeat(MiB - 20)}`
  const res = await app.inject({ method: 'POST', url, headers: { ...creator.headers, 'content-type': 'application/json' }, payload: padded })
  t.same([res.statusCode, json(res).code], [413, 'PayloadTooLarge'], "a body under BODY_LIMIT_BYTES but past the route's limit")
})

t.test("404s and 405s count toward the client's rate limit, by the same address rules", async t => {
  const app = await build(t, { env: { RATE_LIMIT_MAX: '5' } })
  const statuses = async (requests: InjectOptions[]) => {
    const out = []
    for (const r of requests) out.push((await app.inject(r)).statusCode)
    return out
  }
  const flood = Array.from({ length: 6 }, (_, i): InjectOptions => ({
    method: i % 2 ? 'PUT' : 'GET',
    url: i % 2 ? '/health' : `/v1/nope/${i}`,
    remoteAddress: '192.0.2.7'
  }))
  t.same(await statuses(flood), [404, 405, 404, 405, 404, 429], 'the sixth unknown URL meets 429')
  const limited = await app.inject({ method: 'GET', url: '/v1/posts', remoteAddress: '192.0.2.7' })
  t.equal(limited.statusCode, 429, 'and so does a known route from the same client')
  t.ok(Number(limited.headers['retry-after']) >= 1, 'with Retry-After')
  // one IPv6 /64 is one client, and an IPv4-mapped address is its IPv4 one
  const v6 = Array.from({ length: 6 }, (_, i): InjectOptions => ({ method: 'GET', url: '/v1/nope', remoteAddress: `2001:db8:1:2::${i + 1}` }))
  t.same(await statuses(v6), [404, 404, 404, 404, 404, 429], 'six addresses of one /64 share a count')
  const mapped = [
    ...Array.from({ length: 5 }, (): InjectOptions => ({ method: 'GET', url: '/nope', remoteAddress: '198.51.100.9' })),
    { method: 'GET', url: '/nope', remoteAddress: '::ffff:198.51.100.9' } as InjectOptions
  ]
  t.same(await statuses(mapped), [404, 404, 404, 404, 404, 429], 'the mapped spelling shares the IPv4 count')
})

t.test('sort is bounded in the schema: a repeat, an unknown field or 2,000 terms are 422 naming the rule, never 500', async t => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'info' })
  const wrong: string[] = []
  for (const sort of [
    Array(2000).fill('title').join(','),
    'title,title',
    'title,-title',
    'created_at,title,created_at',
    'nope',
    'title,',
    ',title'
  ]) {
    const { res, costMs } = await timed(app, { method: 'GET', url: `/v1/posts?sort=${sort}` })
    const issues = res.statusCode === 422 ? json(res).errors.filter((e: { field: string }) => e.field === '/sort') : []
    if (res.statusCode !== 422 || issues.length === 0) wrong.push(`${sort.slice(0, 30)}: ${res.statusCode}`)
    for (const { rule, message } of issues) {
      const named =
        rule === 'maxLength'
          ? /at most 45 characters/
          : /fields among created_at, updated_at, published_at, title, comma-separated, each at most once/
      if (!named.test(message)) wrong.push(`${sort.slice(0, 30)}: ${rule}: ${message}`)
    }
    if (costMs > BUDGET_MS) wrong.push(`${sort.slice(0, 30)}: cost ${costMs.toFixed(0)} ms of CPU`)
  }
  t.same(wrong, [])
  const every = await app.inject({ method: 'GET', url: '/v1/posts?sort=-published_at,title,created_at,updated_at' })
  t.equal(every.statusCode, 200, 'every field once, in any order and direction, is a sort')
  t.notOk(
    logs.some(l => l.includes('"level":50')),
    'nothing was logged as an error'
  )
})

t.test('an answer echoes at most 256 characters of the path', async t => {
  const app = await build(t)
  const path = `/v1/${'a'.repeat(15_000)}`
  const res = await app.inject({ method: 'GET', url: path })
  t.equal(res.statusCode, 404)
  t.ok(res.body.length < 1024, `the answer is ${res.body.length} bytes`)
  t.equal(json(res).instance, `${path.slice(0, 256)}…`)
  const post = await app.inject({ method: 'GET', url: `/v1/posts/${'b'.repeat(190)}` })
  t.ok(post.body.length < 2048, `a 422 for a long id: ${post.body.length} bytes`)
})

t.test('a control character in any string of a body is 422 naming where, and nothing is written', async t => {
  const app = await build(t)
  const creator = await createCreator(app)
  const send = (payload: string) =>
    app.inject({ method: 'POST', url: '/v1/posts', headers: { ...creator.headers, 'content-type': 'application/json' }, payload })
  const res = await send('{"type":"ARTICLE","title":"T","body":"a\\u0001b"}')
  t.same(
    [res.statusCode, json(res).errors],
    [
      422,
      [
        {
          in: 'body',
          field: '/body',
          rule: 'controlCharacters',
          message: 'must not hold control characters other than tab, line feed and carriage return'
        }
      ]
    ]
  )
  const tags = await send('{"type":"ARTICLE","title":"T","tags":["ok","\\u001f"]}')
  t.equal(json(tags).errors[0].field, '/tags/1')
  const sloppy = await send('{"type":"ARTICLE","title":"T","body":"tab\\tline\\nreturn\\r"}')
  t.equal(sloppy.statusCode, 201, 'tab, line feed and carriage return are text')
  const rows = await app.db.selectFrom('post').select('id').execute()
  t.equal(rows.length, 1, 'only the valid post was written')
  const login = await app.inject({
    method: 'POST',
    url: '/v1/auth/token',
    headers: { 'content-type': 'application/json' },
    payload: `{"username":"${creator.username}","password":"${PASSWORD}\\u0000"}`
  })
  t.equal(login.statusCode, 422, 'on every route')
})
