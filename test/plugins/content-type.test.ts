import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import { Type } from '../../schemas/typebox.js'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import config from '../../plugins/config.js'
import contentType, { mediaType } from '../../plugins/content-type.js'
import problems from '../../plugins/problems.js'
import { build, json, testConfig, testFastify, whileMigrating } from '../helper.js'

const VALID = JSON.stringify({ name: 'ab' })
const INVALID = JSON.stringify({ name: 'a', admin: true })

/** The content-type plugin on a bare Fastify, with a strict JSON route and a form route. */
async function bare (t: Test, { factory = true } = {}): Promise<FastifyInstance> {
  const cfg = testConfig()
  const app = factory ? testFastify(cfg) : Fastify()
  await app.register(config, { config: cfg })
  await app.register(problems)
  await app.register(contentType)
  app.post(
    '/things',
    {
      schema: { body: Type.Object({ name: Type.String({ minLength: 2 }) }, { additionalProperties: false }) }
    },
    async request => ({ accepted: request.body })
  )
  // Like the PATCH routes: a JSON Merge Patch, as application/merge-patch+json or application/json.
  app.patch(
    '/things',
    {
      schema: { body: Type.Object({ name: Type.Optional(Type.String({ minLength: 2 })) }, { additionalProperties: false }) }
    },
    async request => ({ accepted: request.body })
  )
  // Like POST /v1/auth/token: a route names the types it takes, here a form besides JSON.
  app.register(async scope => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)))
    })
    scope.post(
      '/form',
      {
        config: { contentTypes: ['application/json', 'application/x-www-form-urlencoded'] },
        schema: { body: Type.Object({ name: Type.String({ minLength: 2 }) }, { additionalProperties: false }) }
      },
      async request => ({ accepted: request.body })
    )
    // Like POST /v1/media: a route that names only a form refuses JSON.
    scope.post('/upload', { config: { contentTypes: ['multipart/form-data'] } }, async () => ({ ok: true }))
  })
  await whileMigrating(() => app.ready())
  t.teardown(() => app.close())
  return app
}

/** Sends bytes exactly as given over a real socket: app.inject refuses some of these headers. */
async function raw (app: FastifyInstance, head: string, body: string, method = 'POST'): Promise<{ status: number; text: string }> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', chunk => {
      text += chunk
    })
    socket.on('error', reject)
    socket.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text }))
    socket.end(`${method} /things HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${head}\r\n${body}`, 'latin1')
  })
}

function contentHead (type: string | undefined, body: string) {
  return `${type === undefined ? '' : `Content-Type: ${type}\r\n`}Content-Length: ${Buffer.byteLength(body)}\r\n`
}

// Content-type variants. `parsed`: the header names JSON and the body is parsed and validated;
// otherwise it is refused with 415 before any parser runs.
const VARIANTS: Array<{ header: string; parsed: boolean }> = [
  { header: 'application/json', parsed: true },
  { header: 'Application/Json', parsed: true },
  { header: 'APPLICATION/JSON', parsed: true },
  { header: 'application/json; charset=utf-8', parsed: true },
  { header: 'application/json;charset=UTF-8', parsed: true },
  { header: 'application/json; charset="utf-8"', parsed: true },
  { header: 'application/json ;', parsed: false },
  { header: 'application/json;', parsed: false },
  { header: 'application/json\tx', parsed: false },
  { header: ' application/json', parsed: false },
  { header: 'application/json; charset=latin1', parsed: false },
  { header: 'application/json; boundary=x', parsed: false },
  { header: 'application/jsonx', parsed: false },
  { header: 'application/json, text/plain', parsed: false },
  { header: 'text/plain', parsed: false },
  { header: 'text/plain; charset=utf-8', parsed: false },
  { header: 'application/x-www-form-urlencoded', parsed: false },
  { header: 'multipart/form-data; boundary=----x', parsed: false },
  { header: 'application/vnd.api+json', parsed: false }
]

t.test('each Content-Type variant is parsed and validated, or refused with 415 (app.inject)', async t => {
  const app = await bare(t)
  for (const { header, parsed } of VARIANTS) {
    const invalid = await app.inject({ method: 'POST', url: '/things', headers: { 'content-type': header }, payload: INVALID })
    const valid = await app.inject({ method: 'POST', url: '/things', headers: { 'content-type': header }, payload: VALID })
    const name = JSON.stringify(header)
    if (parsed) {
      t.equal(invalid.statusCode, 422, `${name}: an invalid body is validated`)
      t.equal(json(invalid).code, 'ValidationFailed')
      t.equal(valid.statusCode, 200, `${name}: a valid body is accepted`)
      t.same(json(valid), { accepted: { name: 'ab' } })
    } else {
      t.equal(invalid.statusCode, 415, `${name}: refused`)
      t.equal(json(invalid).code, 'UnsupportedMediaType')
      t.equal(valid.statusCode, 415, `${name}: refused even with a valid body`)
    }
  }
})

// PATCH variants: a merge patch or JSON is parsed and validated; anything else, a JSON Patch included, is 415.
const PATCH_VARIANTS: Array<{ header: string; parsed: boolean }> = [
  { header: 'application/merge-patch+json', parsed: true },
  { header: 'Application/Merge-Patch+JSON', parsed: true },
  { header: 'application/merge-patch+json; charset=utf-8', parsed: true },
  { header: 'application/merge-patch+json;charset=UTF-8', parsed: true },
  { header: 'application/merge-patch+json; charset="utf-8"', parsed: true },
  { header: 'application/json', parsed: true },
  { header: 'application/json; charset=utf-8', parsed: true },
  { header: 'application/merge-patch+json ;', parsed: false },
  { header: 'application/merge-patch+json;', parsed: false },
  { header: 'application/merge-patch+json\tx', parsed: false },
  { header: ' application/merge-patch+json', parsed: false },
  { header: 'application/merge-patch+json; charset=latin1', parsed: false },
  { header: 'application/merge-patch+json; boundary=x', parsed: false },
  { header: 'application/merge-patch+jsonx', parsed: false },
  { header: 'application/merge-patch+json, application/json', parsed: false },
  { header: 'application/json-patch+json', parsed: false },
  { header: 'application/json-patch+json; charset=utf-8', parsed: false },
  { header: 'text/plain', parsed: false },
  { header: 'application/x-www-form-urlencoded', parsed: false }
]
const VALID_PATCH = JSON.stringify({ name: 'ab' })
const INVALID_PATCH = JSON.stringify({ name: 'a' })

t.test('a PATCH takes a merge patch or JSON, each variant strict; anything else is 415 naming the two', async t => {
  const app = await bare(t)
  for (const { header, parsed } of PATCH_VARIANTS) {
    const name = JSON.stringify(header)
    const invalid = await app.inject({ method: 'PATCH', url: '/things', headers: { 'content-type': header }, payload: INVALID_PATCH })
    const valid = await app.inject({ method: 'PATCH', url: '/things', headers: { 'content-type': header }, payload: VALID_PATCH })
    if (parsed) {
      t.equal(invalid.statusCode, 422, `${name}: an invalid body is validated`)
      t.equal(valid.statusCode, 200, `${name}: a valid body is accepted`)
      t.same(json(valid), { accepted: { name: 'ab' } })
    } else {
      t.equal(invalid.statusCode, 415, `${name}: refused`)
      t.equal(valid.statusCode, 415, `${name}: refused even with a valid body`)
      t.match(json(valid).detail, /Content-Type must be application\/merge-patch\+json or application\/json$/, `${name}: the detail names the two`)
      t.equal(valid.headers['accept-patch'], 'application/merge-patch+json, application/json', `${name}: Accept-Patch names them too`)
    }
  }
  const jsonPatch = await app.inject({
    method: 'PATCH',
    url: '/things',
    headers: { 'content-type': 'application/json-patch+json' },
    payload: '[{"op":"replace","path":"/name","value":"ab"}]'
  })
  t.equal(json(jsonPatch).detail, 'a JSON Patch (RFC 6902) is not taken; Content-Type must be application/merge-patch+json or application/json')
  const none = await raw(app, contentHead(undefined, VALID_PATCH), VALID_PATCH, 'PATCH')
  t.equal(none.status, 415, 'a PATCH body without a Content-Type is refused')
  t.match(none.text, /a body needs a Content-Type: application\/merge-patch\+json or application\/json/)
})

// Over a raw socket the HTTP parser trims a leading space, so ` application/json` arrives as plain JSON.
for (const [method, variants, valid, invalid, trimmed] of [
  ['POST', VARIANTS, VALID, INVALID, ' application/json'],
  ['PATCH', PATCH_VARIANTS, VALID_PATCH, INVALID_PATCH, ' application/merge-patch+json']
] as const) {
  t.test(`each ${method} Content-Type variant sent over a raw socket never lets an invalid body through`, async t => {
    const app = await bare(t)
    for (const { header, parsed } of variants) {
      const name = JSON.stringify(header)
      const refused = await raw(app, contentHead(header, invalid), invalid, method)
      t.ok([415, 422, 400].includes(refused.status), `${name}: invalid body answered ${refused.status}, never 2xx`)
      const expected = parsed || header === trimmed ? 200 : 415
      t.equal((await raw(app, contentHead(header, valid), valid, method)).status, expected, `${name}: valid body answered ${expected}`)
    }
  })
}

t.test("a merge patch is refused where no PATCH is, and parsed with the JSON parser's protections", async t => {
  const app = await bare(t)
  const post = await app.inject({ method: 'POST', url: '/things', headers: { 'content-type': 'application/merge-patch+json' }, payload: VALID })
  t.equal(post.statusCode, 415, 'POST takes application/json only')
  t.equal(json(post).detail, 'Content-Type must be application/json')
  t.equal(post.headers['accept-patch'], undefined, 'and names no patch format')
  const poisoned = await app.inject({
    method: 'PATCH',
    url: '/things',
    headers: { 'content-type': 'application/merge-patch+json' },
    payload: '{"name":"ab","__proto__":{"x":1}}'
  })
  t.equal(poisoned.statusCode, 400, 'a __proto__ member is refused')
  t.equal(json(poisoned).code, 'MalformedBody')
  const ctor = await app.inject({
    method: 'PATCH',
    url: '/things',
    headers: { 'content-type': 'application/merge-patch+json' },
    payload: '{"name":"ab","constructor":{"prototype":{"x":1}}}'
  })
  t.equal(ctor.statusCode, 400, 'so is a constructor.prototype member')
  const broken = await app.inject({
    method: 'PATCH',
    url: '/things',
    headers: { 'content-type': 'application/merge-patch+json' },
    payload: '{"name":'
  })
  t.equal(broken.statusCode, 400)
  t.equal(json(broken).code, 'MalformedBody')
  t.equal(mediaType('Application/Merge-Patch+JSON; charset=UTF-8'), 'application/merge-patch+json')
})

t.test('a body without a Content-Type is refused with 415', async t => {
  const app = await bare(t)
  const res = await raw(app, contentHead(undefined, VALID), VALID)
  t.equal(res.status, 415)
  t.match(res.text, /application\/problem\+json/i)
  t.match(res.text, /"code":"UnsupportedMediaType"/)
  const chunked = await raw(app, 'Transfer-Encoding: chunked\r\n', `${VALID.length.toString(16)}\r\n${VALID}\r\n0\r\n\r\n`)
  t.equal(chunked.status, 415, 'a chunked body without a Content-Type too')
  const injected = await app.inject({ method: 'POST', url: '/things', payload: Buffer.from(INVALID) })
  t.equal(injected.statusCode, 415, 'through inject as well')
})

t.test('a request without a body is not a media-type question: a missing body is a validation failure', async t => {
  const app = await bare(t)
  const res = await app.inject({ method: 'POST', url: '/things' })
  t.equal(res.statusCode, 422)
  t.equal(json(res).errors[0].in, 'body')
})

t.test('a route may name another type in config.contentTypes; other routes still refuse it', async t => {
  const app = await bare(t)
  const form = await app.inject({
    method: 'POST',
    url: '/form',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'name=ab'
  })
  t.equal(form.statusCode, 200)
  t.same(json(form), { accepted: { name: 'ab' } })
  const badForm = await app.inject({
    method: 'POST',
    url: '/form',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'name=a&admin=1'
  })
  t.equal(badForm.statusCode, 422, 'and its body is validated')
  const jsonToo = await app.inject({ method: 'POST', url: '/form', headers: { 'content-type': 'application/json' }, payload: VALID })
  t.equal(jsonToo.statusCode, 200, 'JSON stays allowed')
  const elsewhere = await app.inject({
    method: 'POST',
    url: '/things',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'name=ab'
  })
  t.equal(elsewhere.statusCode, 415)
  const jsonOnFormOnly = await app.inject({ method: 'POST', url: '/upload', headers: { 'content-type': 'application/json' }, payload: VALID })
  t.equal(jsonOnFormOnly.statusCode, 415, 'a route that names only multipart refuses JSON')
  const noBoundary = await app.inject({ method: 'POST', url: '/upload', headers: { 'content-type': 'multipart/form-data' }, payload: 'x' })
  t.equal(noBoundary.statusCode, 415, 'multipart without a boundary is refused')
  const textOnForm = await app.inject({ method: 'POST', url: '/form', headers: { 'content-type': 'text/plain' }, payload: 'name=ab' })
  t.equal(textOnForm.statusCode, 415)
})

t.test('the plugin works alone on a plain Fastify() without the options factory', async t => {
  const app = await bare(t, { factory: false })
  t.equal((await app.inject({ method: 'POST', url: '/things', headers: { 'content-type': 'text/plain' }, payload: VALID })).statusCode, 415)
  t.equal((await app.inject({ method: 'POST', url: '/things', headers: { 'content-type': 'application/json' }, payload: VALID })).statusCode, 200)
})

t.test('mediaType() accepts only well-formed headers', async t => {
  t.equal(mediaType('application/json'), 'application/json')
  t.equal(mediaType('Application/JSON; charset=UTF-8'), 'application/json')
  t.equal(mediaType('multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW'), 'multipart/form-data')
  t.equal(mediaType('application/json ;'), undefined)
  t.equal(mediaType('application/json\tx'), undefined)
  t.equal(mediaType(' application/json'), undefined)
  t.equal(mediaType(''), undefined)
})

t.test('the real app refuses a text/plain body on a route that takes one', async t => {
  const app = await build(t)
  // /health takes no body, but the rule is about any request that carries one.
  const res = await app.inject({ method: 'GET', url: '/health', headers: { 'content-type': 'text/plain' }, payload: 'x' })
  t.equal(res.statusCode, 415)
  t.equal(json(res).code, 'UnsupportedMediaType')
})
