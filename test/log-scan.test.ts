import t from 'tap'
import { SecretIndex, scanText } from '../scripts/log-scan.js'
import { redactTokens } from '../plugins/security.js'
import { TEST_SECRET } from './helper.js'
import { ISSUED } from './log-capture.js'

// The scanner of the suite's logs (scripts/scan-test-logs.ts) must be able to fail.
const token = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpZCI6IjEiLCJnZW4iOjB9.q2fW1m8oXxkV0J4n3b9Zr7u5T6s1yA2cD8eF0gH4iJk'
const signature = token.split('.')[2]
const index = new SecretIndex([{ kind: 'access_token', value: token }], [{ text: TEST_SECRET, what: 'the JWT secret' }])
const line = (url: string) => JSON.stringify({ level: 30, req: { method: 'GET', url }, res: { statusCode: 400 }, msg: 'request completed' })

t.test('a token in a log line is found, by file and line, without printing it', async t => {
  const hits = scanText(`${line('/v1/posts')}\n${line(`/v1/profiles/me?access_token=${token}`)}\n`, index, 'a.log')
  t.same(hits, [
    { file: 'a.log', line: 2, what: 'a JWT-shaped string' },
    { file: 'a.log', line: 2, what: 'a whole access_token' }
  ])
  t.notMatch(JSON.stringify(hits), signature)
})

t.test('its signature alone is found, also glued to other text', async t => {
  t.same(
    scanText(line(`/x?sig=${signature}`), index).map(h => h.what),
    ['the signature of one access_token']
  )
  t.same(
    scanText(`"authorization":"Bearer x${signature}y"`, index).map(h => h.what),
    ['the signature of one access_token']
  )
})

t.test('any JWT-shaped string and the JWT secret are found', async t => {
  t.same(
    scanText('{"msg":"eyJhbGciOiJub25lIn0.eyJpZCI6IjEifQ."}', index).map(h => h.what),
    ['a JWT-shaped string']
  )
  t.same(
    scanText(`{"secret":"${TEST_SECRET}"}`, index).map(h => h.what),
    ['the JWT secret']
  )
})

t.test('a line without them, and the query-string token redacted as the logger writes it, are clean', async t => {
  t.same(scanText(line('/v1/posts?limit=5'), index), [])
  const redacted = redactTokens(`/v1/profiles/me?access_token=${token}&token=${encodeURIComponent(token)}`)
  t.equal(redacted, '/v1/profiles/me?access_token=[redacted]&token=[redacted]')
  t.same(scanText(line(redacted), index), [])
  t.equal(
    redactTokens('/v1/posts?limit=5&to%6Ben=abc&tokens=1&token+=def'),
    '/v1/posts?limit=5&to%6Ben=[redacted]&tokens=1&token+=[redacted]',
    'escaped and spaced names too, nothing else'
  )
  t.equal(redactTokens('/v1/posts?limit=5&offset=10'), '/v1/posts?limit=5&offset=10', 'a query without one is unchanged')
  t.same(scanText(line(`/v1/profiles/me?x=${signature.slice(0, 20)}`), index), [], 'nor does a part of a signature count')
})

t.test('the tokens of mailed links (verification, password reset) are recorded as secrets and found', async t => {
  const reset = 'Zr8Qm2vXc7LpA4sJgT0bgK'
  const found = ISSUED.flatMap(({ kind, pattern }) =>
    [...`  http://127.0.0.1:3000/reset-password?token=${reset}\n`.matchAll(pattern)].map(m => ({ kind, value: m[1] }))
  )
  t.same(
    found.map(f => f.value),
    [reset],
    "the reset link's token is an issued secret"
  )
  const links = new SecretIndex(found)
  t.same(
    scanText(line(`/reset-password?token=${reset}`), links).map(h => h.line),
    [1],
    'a log line holding it is a hit'
  )
  t.same(scanText(line(redactTokens(`/reset-password?token=${reset}`)), links), [], 'the line as the logger writes it is clean')
})
