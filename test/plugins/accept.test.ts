import t from 'tap'
import { acceptsJson } from '../../plugins/accept.js'
import { createCreator, createUser } from '../fixtures.js'
import { build, json } from '../helper.js'

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64')
const BOUNDARY = '----roja-accept-boundary'

t.test('acceptsJson reads Accept like RFC 9110: the most specific range decides, q=0 refuses', async (t) => {
  const yes = ['*/*', 'application/*', 'application/json', 'application/problem+json', 'application/json; charset=utf-8',
    'text/html, application/json;q=0.1', 'application/xml, */*;q=0.1', 'Application/JSON', 'application/json;q=0, application/problem+json',
    'application/json ; q=0.5', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'application/json;q=nonsense']
  const no = ['application/xml', 'application/json;q=0', 'text/html', 'image/png, text/*', 'application/json;q=0, */*',
    'application/*;q=0, */*', 'application/json;q=0.0, application/problem+json;q=0', 'nonsense', 'text/*;q=1, */*;q=0']
  for (const header of yes) t.ok(acceptsJson(header), `${header}: JSON is acceptable`)
  for (const header of no) t.notOk(acceptsJson(header), `${header}: no JSON is acceptable`)
})

t.test('a JSON route answers 406 NotAcceptable (problem+json) when Accept allows no JSON', async (t) => {
  const app = await build(t)
  for (const accept of ['application/xml', 'application/json;q=0', 'text/html', 'application/json;q=0, */*']) {
    for (const url of ['/v1/posts', '/health', '/v2/posts', '/v1/profiles/me']) {
      const res = await app.inject({ method: 'GET', url, headers: { accept } })
      t.equal(res.statusCode, 406, `${url} with Accept: ${accept}`)
      t.match(res.headers['content-type'], /^application\/problem\+json/)
      t.equal(json(res).code, 'NotAcceptable')
      t.equal(json(res).instance, url)
    }
  }
  // a write is judged on Accept too, before anything changes
  const creator = await createCreator(app)
  const refused = await app.inject({
    method: 'POST', url: '/v1/posts', headers: { ...creator.headers, accept: 'application/xml' }, payload: { type: 'ARTICLE', title: 'Never stored' }
  })
  t.equal(refused.statusCode, 406)
  t.equal(json(await app.inject({ method: 'GET', url: '/v1/users/me/posts', headers: creator.headers })).total, 0, 'nothing was created')
})

t.test('no Accept, wildcards, application/json and application/problem+json keep working', async (t) => {
  const app = await build(t)
  const user = await createUser(app)
  for (const accept of [undefined, '', '*/*', 'application/*', 'application/json', 'application/problem+json',
    'application/json; charset=utf-8', 'text/html, */*;q=0.1', 'application/json, text/plain, */*']) {
    const headers = accept === undefined ? {} : { accept }
    const res = await app.inject({ method: 'GET', url: '/v1/posts', headers })
    t.equal(res.statusCode, 200, `GET /v1/posts with ${accept === undefined ? 'no Accept' : `Accept: ${accept}`}`)
    t.match(res.headers['content-type'], /^application\/json/)
    const me = await app.inject({ method: 'GET', url: '/v1/profiles/me', headers: { ...headers, ...user.headers } })
    t.equal(me.statusCode, 200, `GET /v1/profiles/me with ${accept ?? 'no Accept'}`)
  }
  // an error keeps its own type whatever was asked for
  const missing = await app.inject({ method: 'GET', url: '/v1/posts/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10', headers: { accept: 'application/json' } })
  t.equal(missing.statusCode, 404)
  t.match(missing.headers['content-type'], /^application\/problem\+json/)
})

t.test('media download keeps its own negotiation: the file\'s type gives bytes, JSON the metadata, others 406', async (t) => {
  const app = await build(t)
  const user = await createUser(app, { verified: true }) // uploads need a verified address
  const payload = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="dot.png"\r\nContent-Type: image/png\r\n\r\n`),
    PNG, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)
  ])
  const uploaded = await app.inject({ method: 'POST', url: '/v1/media', headers: { ...user.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, payload })
  t.equal(uploaded.statusCode, 201)
  const url = `/v1/media/${json(uploaded).id}`
  for (const accept of ['image/png', 'image/*', '*/*', 'image/png, application/json;q=0.5']) {
    const res = await app.inject({ method: 'GET', url, headers: { accept } })
    t.equal(res.statusCode, 200, `Accept: ${accept}`)
    t.equal(res.headers['content-type'], 'image/png')
    t.same(res.rawPayload, PNG)
  }
  const bytes = await app.inject({ method: 'GET', url })
  t.equal(bytes.headers['content-type'], 'image/png', 'no Accept: the bytes')
  const meta = await app.inject({ method: 'GET', url, headers: { accept: 'application/json' } })
  t.equal(meta.statusCode, 200)
  t.equal(json(meta).content_type, 'image/png')
  const refused = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } })
  t.equal(refused.statusCode, 406)
  t.match(json(refused).detail, /image\/png or application\/json/, 'the media route says what it has')
  // the app-wide rule would refuse image/png on a JSON route; the media route is not judged by it
  t.equal((await app.inject({ method: 'GET', url: '/v1/posts', headers: { accept: 'image/png' } })).statusCode, 406)
})

t.test('routes that serve other types are not judged by the JSON rule', async (t) => {
  const app = await build(t, { env: { ENVIRONMENT: 'local' } })
  const docs = await app.inject({ method: 'GET', url: '/docs', headers: { accept: 'text/html' } })
  t.equal(docs.statusCode, 200, 'the docs page')
  const metrics = await app.inject({ method: 'GET', url: '/metrics', headers: { accept: 'text/plain' } })
  t.equal(metrics.statusCode, 200, '/metrics')
})
