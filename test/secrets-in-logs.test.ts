import t from 'tap'
import { verificationToken } from './fixtures.js'
import { build, json, TEST_SECRET } from './helper.js'

/**
 * Secrets never logged: every log line (at trace) of a session that signs up, logs in both ways,
 * uses its token well and badly (an upload too), sends it in the URL and in malformed headers, confirms its
 * e-mail verification link (and tampered copies of it), is searched for every token issued, its
 * signature alone, the verification token and its MAC, the password and the JWT secret.
 */
const BOUNDARY = '----roja-secrets-boundary'
const UPLOAD = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${BOUNDARY}--\r\n`

t.test('no log line carries a token, a password or the JWT secret', async (t) => {
  const logs: string[] = []
  const app = await build(t, { logs, logLevel: 'trace' })
  const password = 'a password that must never be logged'
  const signUp = await app.inject({
    method: 'POST', url: '/v1/profiles', payload: { first_name: 'Ada', username: 'ada', email: 'ada@example.com', password }
  })
  t.equal(signUp.statusCode, 201)

  const tokens: string[] = []
  const jsonLogin = await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'ada', password } })
  tokens.push(json(jsonLogin).access_token)
  const formLogin = await app.inject({
    method: 'POST',
    url: '/v1/auth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `grant_type=password&username=ada&password=${encodeURIComponent(password)}`
  })
  tokens.push(json(formLogin).access_token)
  const wrong = await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'ada', password: `${password}!` } })
  t.equal(wrong.statusCode, 401)
  t.equal(tokens.filter(Boolean).length, 2, 'two tokens issued')

  for (const token of tokens) {
    const bearer = { authorization: `Bearer ${token}` }
    const requests = [
      { method: 'GET', url: '/v1/profiles/me', headers: bearer },
      { method: 'PUT', url: '/v1/profiles/me', headers: { ...bearer, 'if-match': '"stale"' }, payload: { first_name: 'X' } },
      { method: 'PUT', url: '/v1/profiles/me', headers: bearer, payload: { first_name: '' } },
      { method: 'POST', url: '/v1/posts', headers: bearer, payload: { title: 'T', type: 'ARTICLE' } },
      { method: 'GET', url: '/v1/nowhere', headers: bearer },
      { method: 'GET', url: `/v1/profiles/me?access_token=${token}` },
      { method: 'GET', url: `/v1/profiles/me?token=${token}&x=1` },
      { method: 'GET', url: `/v1/profiles/me?%74oken=${token}` },
      { method: 'GET', url: `/v1/profiles/me?ACCESS_TOKEN=${encodeURIComponent(token)}` },
      { method: 'GET', url: `/nowhere?x=1&token=${token}` },
      { method: 'GET', url: '/v1/profiles/me', headers: { authorization: `Basic ${token}` } },
      { method: 'GET', url: '/v1/profiles/me', headers: { authorization: `Bearer ${token}x` } },
      { method: 'GET', url: '/v1/profiles/me', headers: { authorization: `Bearer  ${token} extra` } },
      { method: 'POST', url: '/v1/posts', headers: { ...bearer, 'content-type': 'application/json' }, payload: `{"title": "${token}` },
      // an upload before the address is verified: refused (403) before the multipart parser runs
      { method: 'POST', url: '/v1/media', headers: { ...bearer, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, payload: UPLOAD }
    ] as const
    for (const r of requests) {
      const res = await app.inject(r as never)
      t.ok(res.statusCode < 500, `${r.method} ${r.url.slice(0, 30)}: ${res.statusCode}`)
      if (r.url.includes('token=')) t.notMatch(json(res).instance ?? '', token, 'the problem instance leaves the token out')
    }
  }
  // The e-mail verification token: as the front-end page would get it (in a URL), posted well and badly.
  const verification = (await verificationToken(app, 'ada@example.com'))!
  t.ok(verification, 'sign-up queued a verification link')
  const tampered = `${verification.slice(0, 10)}${verification[10] === 'A' ? 'B' : 'A'}${verification.slice(11)}`
  const verificationRequests = [
    { method: 'POST', url: '/v1/email-verifications', payload: { token: tampered } },
    { method: 'POST', url: '/v1/email-verifications', payload: { token: `${verification}.x` } },
    { method: 'POST', url: '/v1/email-verifications', payload: { token: verification, extra: 1 } },
    { method: 'POST', url: '/v1/email-verifications', headers: { 'content-type': 'application/json' }, payload: `{"token": "${verification}` },
    { method: 'GET', url: `/verify-email?token=${verification}` },
    { method: 'POST', url: `/v1/email-verifications?token=${verification}`, payload: { token: verification } },
    { method: 'POST', url: '/v1/email-verifications', payload: { token: verification } },
    { method: 'POST', url: '/v1/email-verifications', payload: { token: verification } }
  ] as const
  const statuses: number[] = []
  for (const r of verificationRequests) statuses.push((await app.inject(r as never)).statusCode)
  t.same(statuses, [422, 422, 422, 400, 200, 400, 204, 204], 'refused, refused …, the page shows its form, refused, then verified (twice: idempotent)')
  // Verified, the upload reaches the multipart parser, which logs the request headers at trace.
  for (const token of tokens) {
    const upload = await app.inject({ method: 'POST', url: '/v1/media', headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, payload: UPLOAD })
    t.equal(upload.statusCode, 201, 'an upload once the address is verified')
  }
  await app.close()

  const all = logs.join('')
  t.ok(logs.length > 40, `the session was logged (${logs.length} lines)`)
  t.match(all, /\[redacted\]/, 'a query token is logged as [redacted]')
  t.match(all, /busboyOptions/, 'the upload parser\'s trace line, with the request headers, is among them')
  for (const token of tokens) {
    t.notOk(all.includes(token), 'no log line holds a whole token')
    t.notOk(all.includes(token.split('.')[2]), 'nor its signature')
    t.notOk(all.includes(encodeURIComponent(token)), 'nor its encoded form')
  }
  t.notOk(all.includes(verification), 'no log line holds the verification token')
  t.notOk(all.includes(tampered), 'nor a tampered copy')
  t.notOk(all.includes(password), 'no log line holds the password')
  t.notOk(all.includes(encodeURIComponent(password)), 'nor its form-encoded form')
  t.notOk(all.includes(TEST_SECRET), 'nor the JWT secret')
})
