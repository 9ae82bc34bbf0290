import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from '../../src/package-info.js'
import { build, json } from '../helper.js'

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']
const HTTPS = { 'x-forwarded-proto': 'https' }

for (const environment of ['local', 'staging']) {
  t.test(`/docs and /openapi/{version}.json are served in ${environment}`, async (t) => {
    const app = await build(t, { env: { ENVIRONMENT: environment } })
    for (const version of ['v1', 'v2']) {
      const res = await app.inject({ method: 'GET', url: `/openapi/${version}.json` })
      t.equal(res.statusCode, 200, `/openapi/${version}.json`)
      t.match(res.headers['content-type'], /^application\/json/)
    }
    const docs = await app.inject({ method: 'GET', url: '/docs' })
    t.equal(docs.statusCode, 200, '/docs')
    t.match(docs.headers['content-type'], /^text\/html/)
    t.match(docs.body, /<title>Roja API docs<\/title>/, 'the page carries Roja\'s name')
    const init = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })
    t.equal(init.statusCode, 200, 'the UI script is served')
    t.match(init.body, /\/openapi\/v1\.json/, 'the UI lists the v1 document')
    const unknown = await app.inject({ method: 'GET', url: '/openapi/v9.json' })
    t.equal(unknown.statusCode, 422, 'an unknown version fails validation')
  })
}

/** Every key of a JSON value with its place, in document order: what a generator walks. */
function keyOrder (value: unknown, at = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => keyOrder(v, `${at}/${i}`))
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([k, v]) => [`${at}/${k}`, ...keyOrder(v, `${at}/${k}`)])
}

t.test('the served documents are the committed ones in the same order, so generated types match client/*.d.ts', async (t) => {
  const app = await build(t, { env: { ENVIRONMENT: 'local' } })
  for (const version of ['v1', 'v2']) {
    const served = json(await app.inject({ method: 'GET', url: `/openapi/${version}.json` }))
    const committed = JSON.parse(readFileSync(join(ROOT, 'openapi', `${version}.json`), 'utf8'))
    const [a, b] = [keyOrder(served), keyOrder(committed)]
    t.ok(a.length > 500, `${version}: ${a.length} keys`)
    t.same(a, b, `${version}: every key in the committed order`)
  }
  t.same(keyOrder({ b: 1, a: [{ d: 1, c: 2 }] }), ['/b', '/a', '/a/0/d', '/a/0/c'], 'the order is read as written')
})

t.test('/docs and /openapi are 404 in production and test', async (t) => {
  const production = await build(t, { env: { ENVIRONMENT: 'production', TRUST_PROXY: '127.0.0.1' } })
  const test = await build(t, { env: { ENVIRONMENT: 'test' } })
  for (const [name, app, headers] of [['production', production, HTTPS], ['test', test, {}]] as const) {
    for (const url of ['/docs', '/docs/', '/docs/static/index.html', '/docs/json', '/openapi/v1.json', '/openapi/v2.json']) {
      const res = await app.inject({ method: 'GET', url, headers })
      t.equal(res.statusCode, 404, `${name} ${url}`)
      t.equal(json(res).code, 'NotFound')
    }
  }
})

t.test('the document is OpenAPI 3.1 with named components, operationIds and the bearer scheme', async (t) => {
  const app = await build(t, { env: { ENVIRONMENT: 'staging' } })
  const seen = new Map<string, string>()
  for (const version of ['v1', 'v2']) {
    const doc = json((await app.inject({ method: 'GET', url: `/openapi/${version}.json` })))
    t.equal(doc.openapi, '3.1.0', `${version}: OpenAPI 3.1`)
    t.equal(doc.info.title, 'Roja API')
    // v2 has only public reads: no scheme it would not use
    if (version === 'v1') t.same(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
    else t.equal(doc.components.securitySchemes, undefined)

    const names = Object.keys(doc.components.schemas ?? {})
    t.same(names.filter(n => /^def-\d+$/.test(n)), [], `${version}: no def-N component names`)
    t.ok(names.includes('Problem'), `${version}: the Problem component`)
    const text = JSON.stringify(doc)
    t.notMatch(text, /#\/components\/schemas\/def-/, `${version}: no $ref to a def-N`)
    for (const [, ref] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
      t.ok(names.includes(ref), `${version}: $ref ${ref} resolves`)
    }

    t.ok(doc.paths['/health'], `${version}: the operational routes are in each document`)
    t.equal(doc.paths['/metrics'], undefined, 'hidden routes stay out')
    t.equal(doc.paths['/openapi/{version}.json'], undefined)
    for (const path of Object.keys(doc.paths)) {
      t.ok(!/^\/v\d+\//.test(path) || path.startsWith(`/${version}/`), `${version} holds only its own versioned paths: ${path}`)
    }

    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (!HTTP_METHODS.includes(method)) continue
        const where = `${version} ${method.toUpperCase()} ${path}`
        t.type(op.operationId, 'string', `${where} has an operationId`)
        const other = seen.get(`${version}:${op.operationId}`)
        t.notOk(other, `${where}: operationId ${op.operationId} is unique`)
        seen.set(`${version}:${op.operationId}`, where)
        // public ([]), a bearer token ([{bearerAuth}]) or an optional one ([{}, {bearerAuth}])
        t.ok([[], [{ bearerAuth: [] }], [{}, { bearerAuth: [] }]].some(s => JSON.stringify(s) === JSON.stringify(op.security)),
          `${where} declares its security: ${JSON.stringify(op.security)}`)
        t.type(op.description, 'string', `${where} has a description`)
        // a create that replays a retried Idempotency-Key documents the key
        if (op.responses['201']?.headers?.['Idempotent-Replayed']) {
          t.ok(op.parameters?.some((p: any) => p.in === 'header' && p.name === 'idempotency-key'), `${where} takes Idempotency-Key`)
        }
        for (const [status, response] of Object.entries<any>(op.responses)) {
          t.not(response.description, 'Default Response', `${where} ${status} is described`)
          if (Number(status) >= 400 && response.content && !(path === '/health' && status === '503')) {
            t.same(Object.keys(response.content), ['application/problem+json'], `${where} ${status} is problem+json`)
          }
        }
      }
    }
  }
})

t.test('the health operation documents its answers with named schemas', async (t) => {
  const app = await build(t, { env: { ENVIRONMENT: 'local' } })
  const doc = app.openapi('v1')
  const op = doc.paths['/health'].get
  t.equal(op.operationId, 'getHealth')
  t.match(JSON.stringify(op.responses['200']), /#\/components\/schemas\//)
})
