import { EventEmitter } from 'node:events'
import { BlockList, type Socket } from 'node:net'
import t from 'tap'
import { canonicalIp, clientKey } from '../plugins/client-identity.js'
import { capConnectionsPerPeer } from '../plugins/security.js'
import { createUser } from './fixtures.js'
import { build, json } from './helper.js'

/**
 * One client, one count: every limit (the rate limits, the password limit, the connection cap)
 * counts an address in one spelling, and an IPv6 client by its /64 (RATE_LIMIT_IPV6_PREFIX).
 */
const IPV4_SPELLINGS = [
  '203.0.113.77',
  '::ffff:203.0.113.77',
  '::ffff:cb00:714d',
  '0:0:0:0:0:ffff:cb00:714d',
  '::FFFF:CB00:714D',
  '0000:0000:0000:0000:0000:ffff:203.0.113.77'
]

t.test('clientKey: IPv4 in any spelling is itself; IPv6 is its network', async t => {
  for (const spelling of IPV4_SPELLINGS) t.equal(clientKey(spelling), '203.0.113.77', spelling)
  const cases: Array<[string, string]> = [
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::12', '2001:db8:1:2::/64'],
    ['2001:DB8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:0000:0000:0000:0001', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['::1', '::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    ['2001:db8::1.2.3.4', '2001:db8::/64'],
    ['not an address', 'not an address']
  ]
  for (const [address, key] of cases) t.equal(clientKey(address), key, address)
  t.equal(clientKey('2001:db8:1:2::1', 128), '2001:db8:1:2::1', 'a prefix of 128 keys each address')
  t.equal(clientKey('2001:db8:1:2::1', 48), '2001:db8:1::/48')
  t.equal(clientKey('2001:db8:1:2:3:4:5:6', 128), '2001:db8:1:2:3:4:5:6', 'no zero run, no ::')
  t.equal(clientKey('2001:0:0:1:0:0:0:1', 128), '2001:0:0:1::1', 'the longest zero run is the one shortened')
  t.equal(canonicalIp('::ffff:10.0.0.1'), '10.0.0.1')
  t.equal(canonicalIp('2001:DB8::0:1'), '2001:db8::1')
  t.equal(canonicalIp('nope'), undefined)
})

const wrongPassword = (app: Awaited<ReturnType<typeof build>>, remoteAddress: string) =>
  app.inject({ method: 'POST', url: '/v1/auth/token', remoteAddress, payload: { username: 'victim', password: 'wrong password' } })

t.test('the password limit: addresses of one /64 share AUTH_RATE_LIMIT_MAX; another /64 has its own', async t => {
  const app = await build(t, { env: { AUTH_RATE_LIMIT_MAX: '10' } })
  await createUser(app, { username: 'victim' })
  const statuses: number[] = []
  for (let n = 1; n <= 12; n++) statuses.push((await wrongPassword(app, `2001:db8:1:2::${n.toString(16)}`)).statusCode)
  t.same(statuses, [...Array(10).fill(401), 429, 429], '12 guesses from 2001:db8:1:2::1..c: ten answered, then 429')
  t.equal((await wrongPassword(app, '2001:db8:1:3::1')).statusCode, 401, 'the next /64 is another client')
})

t.test('the password limit: the spellings of one IPv4 address share one count', async t => {
  const app = await build(t, { env: { AUTH_RATE_LIMIT_MAX: '10' } })
  await createUser(app, { username: 'victim' })
  const statuses: number[] = []
  for (let n = 0; n < 12; n++) statuses.push((await wrongPassword(app, IPV4_SPELLINGS[n % IPV4_SPELLINGS.length])).statusCode)
  t.same(statuses, [...Array(10).fill(401), 429, 429])
  t.equal((await wrongPassword(app, '203.0.113.78')).statusCode, 401, 'the next address is another client')
})

t.test('the general limit counts a /64 as one client, and RATE_LIMIT_IPV6_PREFIX=128 each address', async t => {
  const grouped = await build(t, { env: { RATE_LIMIT_MAX: '3' } })
  const get = (app: typeof grouped, remoteAddress: string) => app.inject({ method: 'GET', url: '/version', remoteAddress })
  for (const n of [1, 2, 3]) t.equal((await get(grouped, `2001:db8:9:9::${n}`)).statusCode, 200)
  const limited = await get(grouped, '2001:db8:9:9:abcd::4')
  t.equal(limited.statusCode, 429)
  t.equal(json(limited).code, 'RateLimited')
  t.equal((await get(grouped, '2001:db8:9:a::1')).statusCode, 200)

  const apart = await build(t, { env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_IPV6_PREFIX: '128' } })
  for (const n of [1, 2, 3, 4, 5]) t.equal((await get(apart, `2001:db8:9:9::${n}`)).statusCode, 200, `::${n} counts alone`)
})

/** A socket as the cap sees one: an address, destroy(), a close event. */
class FakeSocket extends EventEmitter {
  destroyed = false
  constructor (readonly remoteAddress: string) {
    super()
  }

  destroy () {
    this.destroyed = true
    this.emit('close')
  }
}

t.test('the connection cap counts a /64, and every spelling of an IPv4 address, as one peer', async t => {
  const server = new EventEmitter()
  const exempt = new BlockList()
  exempt.addAddress('10.0.0.5', 'ipv4')
  capConnectionsPerPeer(server as never, 3, exempt, 64)
  const connect = (address: string) => {
    const socket = new FakeSocket(address)
    server.emit('connection', socket as unknown as Socket)
    return socket
  }
  const six = ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2::3', '2001:db8:1:2::4'].map(connect)
  t.same(
    six.map(s => s.destroyed),
    [false, false, false, true],
    'the fourth address of the /64 is cut'
  )
  t.notOk(connect('2001:db8:1:3::1').destroyed, 'another /64 is not')
  six[0].destroy()
  t.notOk(connect('2001:db8:1:2::9').destroyed, 'once one closes, the network may connect again')

  const four = IPV4_SPELLINGS.slice(0, 4).map(connect)
  t.same(
    four.map(s => s.destroyed),
    [false, false, false, true],
    'the spellings of one IPv4 address are one peer'
  )
  const proxy = Array.from({ length: 5 }, () => connect('::ffff:10.0.0.5'))
  t.ok(
    proxy.every(s => !s.destroyed),
    'a trusted proxy is exempt, however its address is written'
  )
})
