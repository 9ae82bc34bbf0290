import t from 'tap'
import { build, json } from '../helper.js'
import { createUser } from '../fixtures.js'
import { trustFunction } from '../../plugins/security.js'

// Each accepted form of TRUST_PROXY, all naming the proxy at 127.0.0.1 (light-my-request's peer address).
const FORMS = ['127.0.0.1', '127.0.0.0/8', 'loopback', '10.0.0.1, 127.0.0.1']
const PROXY = '127.0.0.1'
const STRANGER = '198.51.100.7' // a client that reached the server without the proxy

for (const form of FORMS) {
  t.test(`TRUST_PROXY=${form}`, async t => {
    t.test("production: the proxy's X-Forwarded-Proto is honoured, a direct client's is not", async t => {
      const app = await build(t, { env: { ENVIRONMENT: 'production', TRUST_PROXY: form } })
      const viaProxy = await app.inject({
        method: 'GET',
        url: '/health',
        remoteAddress: PROXY,
        headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.1' }
      })
      t.equal(viaProxy.statusCode, 200, 'https as the proxy says')
      const direct = await app.inject({
        method: 'GET',
        url: '/health',
        remoteAddress: STRANGER,
        headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.1' }
      })
      t.equal(direct.statusCode, 403, 'a forged X-Forwarded-Proto from a direct client is ignored')
      t.equal(json(direct).code, 'HttpsRequired')
    })

    t.test('the rate limit counts the address the proxy saw, whatever the client prepends', async t => {
      const app = await build(t, { env: { ENVIRONMENT: 'production', TRUST_PROXY: form, RATE_LIMIT_MAX: '3' } })
      const get = (forwardedFor: string) =>
        app.inject({
          method: 'GET',
          url: '/version',
          remoteAddress: PROXY,
          headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': forwardedFor }
        })
      for (let n = 1; n <= 3; n++) t.equal((await get(`10.9.0.${n}, 203.0.113.5`)).statusCode, 200, `forged entry ${n} passes within the limit`)
      const limited = await get('10.9.0.4, 203.0.113.5')
      t.equal(limited.statusCode, 429, 'a fourth forged entry does not escape the limit')
      t.equal(json(limited).code, 'RateLimited')
      t.equal((await get('203.0.113.6')).statusCode, 200, 'another client behind the proxy has its own count')
    })

    t.test("a direct client's X-Forwarded-For is ignored: it is counted by its own address", async t => {
      const app = await build(t, { env: { TRUST_PROXY: form, RATE_LIMIT_MAX: '3' } })
      const get = (n: number) =>
        app.inject({ method: 'GET', url: '/version', remoteAddress: STRANGER, headers: { 'x-forwarded-for': `10.9.0.${n}` } })
      for (let n = 1; n <= 3; n++) t.equal((await get(n)).statusCode, 200)
      t.equal((await get(4)).statusCode, 429)
    })

    t.test('the per-username password limit cannot be escaped with X-Forwarded-For', async t => {
      const app = await build(t, { env: { ENVIRONMENT: 'production', TRUST_PROXY: form, AUTH_RATE_LIMIT_MAX: '10' } })
      await createUser(app, { username: 'victim' })
      const statuses: number[] = []
      for (let n = 1; n <= 25; n++) {
        for (const [remoteAddress, forwardedFor] of [
          [PROXY, `10.9.0.${n}, 203.0.113.50`],
          [STRANGER, `10.9.0.${n}`]
        ]) {
          const res = await app.inject({
            method: 'POST',
            url: '/v1/auth/token',
            remoteAddress,
            headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': forwardedFor },
            payload: { username: 'victim', password: 'wrong password' }
          })
          if (remoteAddress === PROXY) statuses.push(res.statusCode)
        }
      }
      t.same(statuses.slice(0, 10), Array(10).fill(401), 'ten guesses through the proxy are answered')
      t.same(statuses.slice(10), Array(15).fill(429), 'the eleventh and later are refused, whatever X-Forwarded-For says')
    })
  })
}

t.test('TRUST_PROXY unset: X-Forwarded-* are ignored altogether', async t => {
  const app = await build(t, { env: { RATE_LIMIT_MAX: '2' } })
  const get = (n: number) => app.inject({ method: 'GET', url: '/version', remoteAddress: PROXY, headers: { 'x-forwarded-for': `10.9.0.${n}` } })
  t.equal((await get(1)).statusCode, 200)
  t.equal((await get(2)).statusCode, 200)
  t.equal((await get(3)).statusCode, 429)
})

t.test('the trust function answers like the list it was made from, for every kind of address, and stays right past its memory', async t => {
  const trust = trustFunction(['10.0.0.0/8', '192.0.2.5', 'loopback'])
  const cases: Array<[string, boolean]> = [
    ['10.0.0.1', true],
    ['10.255.255.255', true],
    ['11.0.0.0', false],
    ['9.255.255.255', false],
    ['192.0.2.5', true],
    ['192.0.2.6', false],
    ['127.0.0.1', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:10.1.2.3', true],
    ['2001:db8::1', false],
    ['not-an-address', false],
    ['', false],
    ['10.0.0.1 ', false]
  ]
  for (let round = 0; round < 2; round++) {
    for (const [address, expected] of cases) t.equal(trust(address, 0), expected, `${JSON.stringify(address)} (round ${round + 1})`)
    // a flood of client-written addresses fills and clears the remembered answers
    for (let i = 0; i < 3000; i++) trust(`198.51.${i >> 8}.${i & 255}`, 1)
  }
})
