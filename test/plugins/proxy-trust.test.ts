import t from 'tap'
import { build, json } from '../helper.js'
import { createUser } from '../fixtures.js'

// Each accepted form of TRUST_PROXY, all naming the proxy at 127.0.0.1 (light-my-request's peer address).
const FORMS = ['127.0.0.1', '127.0.0.0/8', 'loopback', '10.0.0.1, 127.0.0.1']
const PROXY = '127.0.0.1'
const STRANGER = '198.51.100.7' // a client that reached the server without the proxy

for (const form of FORMS) {
  t.test(`TRUST_PROXY=${form}`, async (t) => {
    t.test('production: the proxy\'s X-Forwarded-Proto is honoured, a direct client\'s is not', async (t) => {
      const app = await build(t, { env: { ENVIRONMENT: 'production', TRUST_PROXY: form } })
      const viaProxy = await app.inject({ method: 'GET', url: '/health', remoteAddress: PROXY, headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.1' } })
      t.equal(viaProxy.statusCode, 200, 'https as the proxy says')
      const direct = await app.inject({ method: 'GET', url: '/health', remoteAddress: STRANGER, headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.1' } })
      t.equal(direct.statusCode, 403, 'a forged X-Forwarded-Proto from a direct client is ignored')
      t.equal(json(direct).code, 'HttpsRequired')
    })

    t.test('the rate limit counts the address the proxy saw, whatever the client prepends', async (t) => {
      const app = await build(t, { env: { ENVIRONMENT: 'production', TRUST_PROXY: form, RATE_LIMIT_MAX: '3' } })
      const get = (forwardedFor: string) => app.inject({
        method: 'GET', url: '/version', remoteAddress: PROXY, headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': forwardedFor }
      })
      for (let n = 1; n <= 3; n++) t.equal((await get(`10.9.0.${n}, 203.0.113.5`)).statusCode, 200, `forged entry ${n} passes within the limit`)
      const limited = await get('10.9.0.4, 203.0.113.5')
      t.equal(limited.statusCode, 429, 'a fourth forged entry does not escape the limit')
      t.equal(json(limited).code, 'RateLimited')
      t.equal((await get('203.0.113.6')).statusCode, 200, 'another client behind the proxy has its own count')
    })

    t.test('a direct client\'s X-Forwarded-For is ignored: it is counted by its own address', async (t) => {
      const app = await build(t, { env: { TRUST_PROXY: form, RATE_LIMIT_MAX: '3' } })
      const get = (n: number) => app.inject({ method: 'GET', url: '/version', remoteAddress: STRANGER, headers: { 'x-forwarded-for': `10.9.0.${n}` } })
      for (let n = 1; n <= 3; n++) t.equal((await get(n)).statusCode, 200)
      t.equal((await get(4)).statusCode, 429)
    })

    t.test('the per-username password limit cannot be escaped with X-Forwarded-For', async (t) => {
      const app = await build(t, { env: { ENVIRONMENT: 'production', TRUST_PROXY: form, AUTH_RATE_LIMIT_MAX: '10' } })
      await createUser(app, { username: 'victim' })
      const statuses: number[] = []
      for (let n = 1; n <= 25; n++) {
        for (const [remoteAddress, forwardedFor] of [[PROXY, `10.9.0.${n}, 203.0.113.50`], [STRANGER, `10.9.0.${n}`]]) {
          const res = await app.inject({
            method: 'POST', url: '/v1/auth/token', remoteAddress,
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

t.test('TRUST_PROXY unset: X-Forwarded-* are ignored altogether', async (t) => {
  const app = await build(t, { env: { RATE_LIMIT_MAX: '2' } })
  const get = (n: number) => app.inject({ method: 'GET', url: '/version', remoteAddress: PROXY, headers: { 'x-forwarded-for': `10.9.0.${n}` } })
  t.equal((await get(1)).statusCode, 200)
  t.equal((await get(2)).statusCode, 200)
  t.equal((await get(3)).statusCode, 429)
})
