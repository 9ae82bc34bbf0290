import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generate } from 'selfsigned'
import t from 'tap'
import { redactTokens } from '../../plugins/security.js'
import { createUser } from '../fixtures.js'
import { build, json } from '../helper.js'

const PRODUCTION = { ENVIRONMENT: 'production', TRUST_PROXY: '127.0.0.1' }

t.test('security headers are on every answer, errors included', async t => {
  const app = await build(t)
  for (const url of ['/health', '/nowhere']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${url}: nosniff`)
    t.equal(res.headers['x-frame-options'], 'SAMEORIGIN', `${url}: frame options`)
    t.ok(res.headers['referrer-policy'], `${url}: referrer policy`)
    t.equal(res.headers['x-powered-by'], undefined, `${url}: no x-powered-by`)
    t.equal(res.headers['strict-transport-security'], undefined, `${url}: no HSTS outside production`)
  }
})

t.test('CORS', async t => {
  t.test('an allowed origin is echoed, without credentials', async t => {
    const app = await build(t, { env: { ALLOWED_CORS_ORIGINS: 'https://app.example.com, https://admin.example.com' } })
    for (const origin of ['https://app.example.com', 'https://admin.example.com']) {
      const res = await app.inject({ method: 'GET', url: '/health', headers: { origin } })
      t.equal(res.statusCode, 200)
      t.equal(res.headers['access-control-allow-origin'], origin)
      t.equal(res.headers['access-control-allow-credentials'], undefined)
      t.match(res.headers['access-control-expose-headers'], /location/)
    }
  })

  t.test('a foreign origin gets no Access-Control-Allow-Origin', async t => {
    const app = await build(t, { env: { ALLOWED_CORS_ORIGINS: 'https://app.example.com' } })
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.test', 'http://app.example.com']) {
      const res = await app.inject({ method: 'GET', url: '/health', headers: { origin } })
      t.equal(res.headers['access-control-allow-origin'], undefined, origin)
    }
  })

  t.test('no origins configured: no CORS headers at all', async t => {
    const app = await build(t)
    const res = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://app.example.com' } })
    t.equal(res.headers['access-control-allow-origin'], undefined)
  })

  t.test('* allows any origin and never credentials', async t => {
    const app = await build(t, { env: { ALLOWED_CORS_ORIGINS: '*' } })
    const res = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://anyone.example.net' } })
    t.equal(res.headers['access-control-allow-origin'], '*')
    t.equal(res.headers['access-control-allow-credentials'], undefined)
    const pre = await app.inject({
      method: 'OPTIONS',
      url: '/health',
      headers: { origin: 'https://anyone.example.net', 'access-control-request-method': 'GET' }
    })
    t.equal(pre.headers['access-control-allow-origin'], '*')
    t.equal(pre.headers['access-control-allow-credentials'], undefined)
  })

  t.test('a preflight names the methods and headers clients need', async t => {
    const app = await build(t, { env: { ALLOWED_CORS_ORIGINS: 'https://app.example.com' } })
    const res = await app.inject({
      method: 'OPTIONS',
      url: '/v1/posts',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type'
      }
    })
    t.equal(res.statusCode, 204)
    t.equal(res.headers['access-control-allow-origin'], 'https://app.example.com')
    t.same(
      String(res.headers['access-control-allow-methods'])
        .split(',')
        .map(m => m.trim())
        .sort(),
      ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT'],
      'every method the API has, PATCH included'
    )
    t.match(String(res.headers['access-control-allow-headers']).toLowerCase(), /authorization/)
    t.match(String(res.headers['access-control-allow-headers']).toLowerCase(), /idempotency-key/)
    t.match(String(res.headers['access-control-allow-headers']).toLowerCase(), /if-match/)
    t.equal(res.headers['access-control-max-age'], '600')
    const foreign = await app.inject({
      method: 'OPTIONS',
      url: '/v1/posts',
      headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' }
    })
    t.equal(foreign.headers['access-control-allow-origin'], undefined)
  })
})

t.test('a token in the query string is 400 TokenInQuery on any route', async t => {
  const app = await build(t)
  const urls = [
    '/health?access_token=abc',
    '/health?token=abc',
    '/health?ACCESS_TOKEN=abc',
    '/health?Token=abc',
    '/health?x=1&access_token=',
    '/health?acc%65ss_token=abc',
    '/health?%74oken=abc',
    '/health?%54OKEN=abc',
    '/health?access%5Ftoken=abc',
    '/health?token+=abc',
    '/v1/nowhere?token=abc',
    '/unknown/route?access_token=abc'
  ]
  for (const url of urls) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 400, url)
    t.equal(json(res).code, 'TokenInQuery', url)
    t.equal(json(res).instance, url.split('?')[0], `${url}: the instance leaves the token out`)
  }
  const post = await app.inject({ method: 'POST', url: '/v1/posts?token=abc', headers: { 'content-type': 'application/json' }, payload: '{}' })
  t.equal(post.statusCode, 400, 'on a POST too')
})

t.test('query parameters that only look like token names are not refused', async t => {
  const app = await build(t)
  for (const url of ['/nowhere?tokens=1', '/nowhere?token_type=1', '/nowhere?my_token=1', '/nowhere?q=token']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404, url)
  }
})

t.test('a JWT under any other name, or anywhere in the URL, is never logged', async t => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'trace' })
  const user = await createUser(app)
  const token = user.token
  const dotted = token.replaceAll('.', '%2E')
  const urls = [
    `/v1/profiles/me?access_token[]=${token}`,
    `/v1/profiles/me?access_token%00=${token}`,
    `/v1/profiles/me?jwt=${token}`,
    `/v1/profiles/me?id_token=${token}`,
    `/v1/profiles/me?auth=Bearer%20${token}`,
    `/v1/profiles/me?x=${dotted}`,
    `/v1/posts/${token}`,
    `/v1/nowhere/${token}/more`,
    `/v1/posts?sort=${token}`,
    `/v1/profiles/me?jwt=${token.replace('eyJ', 'ey%4A')}`,
    `/v1/profiles/me?jwt=${token.replace(/^eyJ/, '%65yJ').replace('.eyJ', '.e%79J')}`,
    `/v1/profiles/me?acces_tokn=${token.split('.').slice(1).join('.')}`,
    `/v1/profiles/me?x=${token.split('.').slice(1).join('%2e')}`
  ]
  for (const url of urls) {
    const res = await app.inject({ method: 'GET', url })
    t.ok(res.statusCode >= 400 && res.statusCode < 500, `${url.slice(0, 40)}: ${res.statusCode}`)
  }
  const all = logs.join('')
  t.ok(logs.length >= urls.length, 'each request was logged')
  t.notOk(all.includes(token), 'no log line holds the token')
  t.notOk(all.includes(token.split('.')[1]), 'nor its payload')
  t.notOk(all.includes(token.split('.')[2]), 'nor its signature (percent-encoded letters, or a token without its header, under any name)')
  t.notOk(all.includes(token.split('.')[1].slice(4)), 'nor most of its payload')
  t.notOk(all.includes(dotted.split('%2E')[1]), 'nor the percent-encoded form')
  t.match(all, /"url":"\/v1\/nowhere\/\[redacted\]\/more"[^\n]*"request completed"/, 'a token sent in the path is replaced in the request line')
  t.equal(redactTokens('/v1/posts?q=a.b.c&file=x.tar.gz'), '/v1/posts?q=a.b.c&file=x.tar.gz', 'dotted text that is not a JWT stays')
  t.equal(redactTokens(`/v1/x?next=${'eyJ'.repeat(5000)}`).length, 15_011, 'a long run without dots stays, in linear time')
})

t.test('production behind a trusted proxy', async t => {
  const app = await build(t, { env: PRODUCTION })

  t.test('plain HTTP is refused with 403 HttpsRequired', async t => {
    for (const headers of [{}, { 'x-forwarded-proto': 'http' }, { 'x-forwarded-proto': 'HTTPS-not' }]) {
      const res = await app.inject({ method: 'GET', url: '/health', headers })
      t.equal(res.statusCode, 403, JSON.stringify(headers))
      t.equal(json(res).code, 'HttpsRequired')
    }
    const unknown = await app.inject({ method: 'GET', url: '/nowhere' })
    t.equal(unknown.statusCode, 403, 'unknown routes too')
  })

  t.test('HTTPS as the proxy says is served, with HSTS', async t => {
    const res = await app.inject({ method: 'GET', url: '/health', headers: { 'x-forwarded-proto': 'https' } })
    t.equal(res.statusCode, 200)
    t.match(res.headers['strict-transport-security'], /max-age=31536000/)
    t.match(res.headers['strict-transport-security'], /includeSubDomains/)
  })

  t.test('the refusal itself carries HSTS', async t => {
    const res = await app.inject({ method: 'GET', url: '/health' })
    t.match(res.headers['strict-transport-security'], /max-age=31536000/)
  })
})

t.test('TLS_CERT_FILE/TLS_KEY_FILE serve HTTPS directly', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'roja-tls-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keySize: 2048,
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 2, value: 'localhost' }
        ]
      }
    ]
  })
  writeFileSync(join(dir, 'cert.pem'), pems.cert)
  writeFileSync(join(dir, 'key.pem'), pems.private)
  const app = await build(t, {
    env: { ENVIRONMENT: 'production', TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'key.pem') }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const res = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path: '/health', ca: pems.cert }, r => {
      let body = ''
      r.setEncoding('utf8')
      r.on('data', c => {
        body += c
      })
      r.on('end', () => resolve({ status: r.statusCode ?? 0, headers: r.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
  t.equal(res.status, 200, 'served over TLS, no proxy header needed')
  t.same(JSON.parse(res.body), { status: 'ok', checks: { database: 'ok' } })
  t.match(res.headers['strict-transport-security'], /max-age=31536000/)
})
