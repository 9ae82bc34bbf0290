import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import configPlugin, { ConfigError, loadConfig } from '../../plugins/config.js'
import { testConfig, whileMigrating } from '../helper.js'
import { keepLog } from '../log-capture.js'
import { ROOT } from '../../src/package-info.js'
import { serverOptions } from '../../src/options.js'

const SECRET = 'a-secret-that-is-at-least-32-bytes-long'

t.test('defaults', async t => {
  const c = loadConfig({})
  t.equal(c.ENVIRONMENT, 'local')
  t.equal(c.HOST, '127.0.0.1')
  t.equal(c.PORT, 3000)
  t.equal(c.DATA_DIR, './data')
  t.equal(c.dataDir, resolve('./data'))
  t.equal(c.ACCESS_TOKEN_TTL, 3600)
  t.equal(c.ALLOWED_CORS_ORIGINS, '')
  t.equal(c.MAX_UPLOAD_BYTES, 1073741824)
  t.equal(c.RATE_LIMIT_MAX, 300)
  t.equal(c.RATE_LIMIT_WINDOW, '1 minute')
  t.equal(c.LOG_LEVEL, 'info')
  t.equal(c.SMTP_URL, undefined)
  t.equal(c.TLS_CERT_FILE, undefined)
  t.equal(c.trustProxy, undefined)
  t.equal(c.production, false)
  t.equal(c.docsEnabled, true)
})

t.test('only the given variables count, not the shell that runs the tests', async t => {
  const before = process.env.PORT
  process.env.PORT = '4321'
  t.teardown(() => {
    if (before === undefined) delete process.env.PORT
    else process.env.PORT = before
  })
  t.equal(loadConfig({}).PORT, 3000)
  t.equal(loadConfig({ PORT: '8080' }).PORT, 8080)
})

t.test('derived values', async t => {
  t.test('databaseUrl defaults to a SQLite file under DATA_DIR', async t => {
    t.equal(loadConfig({ DATA_DIR: '/srv/roja' }).databaseUrl, 'sqlite:/srv/roja/roja.sqlite')
    t.equal(loadConfig({ DATA_DIR: '/srv/roja', DATABASE_URL: 'sqlite::memory:' }).databaseUrl, 'sqlite::memory:')
    t.equal(loadConfig({ DATABASE_URL: 'postgres://u@db:5432/roja' }).databaseUrl, 'postgres://u@db:5432/roja')
    t.equal(loadConfig({ DATABASE_URL: 'postgresql://u@db/roja' }).databaseUrl, 'postgresql://u@db/roja')
  })

  t.test('mediaPublicUrl defaults to http://HOST:PORT and loses trailing slashes', async t => {
    t.equal(loadConfig({}).mediaPublicUrl, 'http://127.0.0.1:3000')
    t.equal(loadConfig({ HOST: '0.0.0.0', PORT: '8080' }).mediaPublicUrl, 'http://0.0.0.0:8080')
    t.equal(loadConfig({ MEDIA_PUBLIC_URL: 'https://media.example.com/' }).mediaPublicUrl, 'https://media.example.com')
  })

  t.test('allowedMediaHosts defaults to the host of mediaPublicUrl', async t => {
    t.same(loadConfig({}).allowedMediaHosts, ['127.0.0.1:3000'])
    t.same(loadConfig({ MEDIA_PUBLIC_URL: 'https://Media.Example.com' }).allowedMediaHosts, ['media.example.com'])
    t.same(loadConfig({ ALLOWED_MEDIA_HOSTS: 'cdn.example.com, Media.Example.com ,' }).allowedMediaHosts, ['cdn.example.com', 'media.example.com'])
  })

  t.test('e-mail verification links: EMAIL_VERIFY_URL defaults to /verify-email on HOST:PORT, EMAIL_VERIFY_TTL to a day', async t => {
    t.equal(loadConfig({}).emailVerifyUrl, 'http://127.0.0.1:3000/verify-email')
    t.equal(
      loadConfig({ ENVIRONMENT: 'production', JWT_SECRET: SECRET, TRUST_PROXY: '127.0.0.1', HOST: 'api.example.com', PORT: '443' }).emailVerifyUrl,
      'https://api.example.com:443/verify-email'
    )
    t.equal(loadConfig({ EMAIL_VERIFY_URL: 'https://app.example.com/verify' }).emailVerifyUrl, 'https://app.example.com/verify')
    t.equal(loadConfig({}).EMAIL_VERIFY_TTL, 86400)
    t.equal(loadConfig({ EMAIL_VERIFY_TTL: '3600' }).EMAIL_VERIFY_TTL, 3600)
    t.throws(() => loadConfig({ EMAIL_VERIFY_TTL: '59' }), /EMAIL_VERIFY_TTL must be >= 60/)
    t.throws(() => loadConfig({ EMAIL_VERIFY_TTL: '604801' }), /EMAIL_VERIFY_TTL must be <= 604800/)
    t.throws(() => loadConfig({ EMAIL_VERIFY_URL: 'ftp://app.example.com/verify' }), /EMAIL_VERIFY_URL must be an http:\/\/ or https:\/\/ URL/)
    t.throws(
      () =>
        loadConfig({ ENVIRONMENT: 'production', JWT_SECRET: SECRET, TRUST_PROXY: '127.0.0.1', EMAIL_VERIFY_URL: 'http://app.example.com/verify' }),
      /EMAIL_VERIFY_URL must be https:\/\/ in production/
    )
  })

  t.test('corsOrigins is the trimmed comma list', async t => {
    t.same(loadConfig({}).corsOrigins, [])
    t.same(loadConfig({ ALLOWED_CORS_ORIGINS: 'https://a.example.com, https://b.example.com,' }).corsOrigins, [
      'https://a.example.com',
      'https://b.example.com'
    ])
    t.same(loadConfig({ ALLOWED_CORS_ORIGINS: '*' }).corsOrigins, ['*'])
  })

  t.test('docs only in local and staging', async t => {
    t.equal(loadConfig({ ENVIRONMENT: 'local' }).docsEnabled, true)
    t.equal(loadConfig({ ENVIRONMENT: 'staging' }).docsEnabled, true)
    t.equal(loadConfig({ ENVIRONMENT: 'test' }).docsEnabled, false)
    t.equal(loadConfig({ ENVIRONMENT: 'production', JWT_SECRET: SECRET, TRUST_PROXY: '127.0.0.1' }).docsEnabled, false)
  })

  t.test('TRUST_PROXY: proxy addresses, CIDRs or range names; true outside production only; no hop count', async t => {
    t.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
    t.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, undefined)
    t.same(loadConfig({ TRUST_PROXY: '10.0.0.0/8' }).trustProxy, ['10.0.0.0/8'])
    t.same(loadConfig({ TRUST_PROXY: '127.0.0.1, ::1, fd00::/8,loopback' }).trustProxy, ['127.0.0.1', '::1', 'fd00::/8', 'loopback'])
    t.same(loadConfig({ ENVIRONMENT: 'production', JWT_SECRET: SECRET, TRUST_PROXY: '10.0.0.5,10.1.0.0/16' }).trustProxy, ['10.0.0.5', '10.1.0.0/16'])
    t.throws(
      () => loadConfig({ ENVIRONMENT: 'production', JWT_SECRET: SECRET, TRUST_PROXY: 'true' }),
      /TRUST_PROXY=true lets any client choose its own address/
    )
    for (const hops of ['1', '2']) t.throws(() => loadConfig({ TRUST_PROXY: hops }), /hop count/, `hop count ${hops}`)
    for (const bad of ['proxy.example.com', '10.0.0.0/33', '::1/129', '10.0.0.1/8/1', '10.0.0', 'yes']) {
      t.throws(() => loadConfig({ TRUST_PROXY: bad }), /TRUST_PROXY must be a comma list/, bad)
    }
  })

  t.test('TRUST_PROXY: production refuses a range that trusts (nearly) everyone, as true would', async t => {
    const production = (value: string) => loadConfig({ ENVIRONMENT: 'production', JWT_SECRET: SECRET, TRUST_PROXY: value })
    for (const everyone of [
      '0.0.0.0/0,::/0',
      '0.0.0.0/0',
      '::/0',
      '::ffff:0:0/96',
      '::/64',
      '0.0.0.0/1,128.0.0.0/1',
      '::ffff:0.0.0.0/100',
      '2000::/3',
      '10.0.0.5, 0.0.0.0/0'
    ]) {
      t.throws(() => production(everyone), /trusts \(nearly\) every address, as TRUST_PROXY=true does/, everyone)
    }
    for (const fleet of [
      '10.0.0.0/8',
      '::ffff:10.0.0.0/104',
      'fc00::/7',
      'fd00::/8',
      'fe80::/10',
      '2001:db8::/32',
      '2001:db8:1::/48',
      '::1',
      '10.0.0.5/32',
      'uniquelocal'
    ]) {
      t.ok(production(fleet).trustProxy, `${fleet} is a fleet's range`)
    }
    t.same(loadConfig({ TRUST_PROXY: '0.0.0.0/0,::/0' }).trustProxy, ['0.0.0.0/0', '::/0'], 'outside production, like true, it is allowed')
  })

  t.test('RATE_LIMIT_IPV6_PREFIX: 64 by default, 32 to 128', async t => {
    t.equal(loadConfig({}).RATE_LIMIT_IPV6_PREFIX, 64)
    t.equal(loadConfig({ RATE_LIMIT_IPV6_PREFIX: '128' }).RATE_LIMIT_IPV6_PREFIX, 128)
    for (const bad of ['31', '129', 'wide']) t.throws(() => loadConfig({ RATE_LIMIT_IPV6_PREFIX: bad }), /RATE_LIMIT_IPV6_PREFIX/, bad)
  })

  t.test('DATABASE_POOL_SIZE: 10 by default, 1 to 1000', async t => {
    t.equal(loadConfig({}).DATABASE_POOL_SIZE, 10)
    t.equal(loadConfig({ DATABASE_POOL_SIZE: '1' }).DATABASE_POOL_SIZE, 1)
    t.equal(loadConfig({ DATABASE_POOL_SIZE: '1000' }).DATABASE_POOL_SIZE, 1000)
    for (const bad of ['0', '1001', 'many']) t.throws(() => loadConfig({ DATABASE_POOL_SIZE: bad }), /DATABASE_POOL_SIZE/, bad)
  })

  t.test('slow-client limits have defaults; headers cannot outlast the whole request', async t => {
    const c = loadConfig({})
    t.same(
      [c.HEADERS_TIMEOUT_MS, c.REQUEST_TIMEOUT_MS, c.IDLE_TIMEOUT_MS, c.KEEP_ALIVE_TIMEOUT_MS, c.MAX_CONNECTIONS_PER_IP],
      [10000, 300000, 30000, 72000, 128]
    )
    t.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '4000' }), /HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS/)
    t.throws(() => loadConfig({ MAX_CONNECTIONS_PER_IP: '0' }), /MAX_CONNECTIONS_PER_IP/)
  })

  t.test('JWT secret: the given one, or a random one flagged as generated', async t => {
    const given = loadConfig({ JWT_SECRET: SECRET })
    t.equal(given.jwtSecret, SECRET)
    t.equal(given.jwtSecretGenerated, false)
    const a = loadConfig({})
    const b = loadConfig({})
    t.equal(a.jwtSecretGenerated, true)
    t.ok(Buffer.byteLength(a.jwtSecret) >= 32, 'a random secret is long enough')
    t.not(a.jwtSecret, b.jwtSecret, 'and differs each start')
  })

  t.test('numbers arrive as numbers', async t => {
    const c = loadConfig({ PORT: '0', ACCESS_TOKEN_TTL: '60', MAX_UPLOAD_BYTES: '1024' })
    t.equal(c.PORT, 0)
    t.equal(c.ACCESS_TOKEN_TTL, 60)
    t.equal(c.MAX_UPLOAD_BYTES, 1024)
  })
})

t.test('a bad value stops with a message naming the variable', async t => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'abc' }, /PORT must be integer/],
    [{ PORT: '65536' }, /PORT must be <= 65535/],
    [{ PORT: '-1' }, /PORT/],
    [{ ENVIRONMENT: 'prod' }, /ENVIRONMENT must be one of local, staging, production, test/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/],
    [{ DATABASE_URL: 'mysql://u@db/roja' }, /DATABASE_URL/],
    [{ ACCESS_TOKEN_TTL: '0' }, /ACCESS_TOKEN_TTL/],
    [{ MEDIA_PUBLIC_URL: 'ftp://media.example.com' }, /MEDIA_PUBLIC_URL/],
    [{ SMTP_URL: 'http://mail' }, /SMTP_URL/],
    [{ REDIS_URL: 'localhost:6379' }, /REDIS_URL/],
    [{ MAX_UPLOAD_BYTES: '1GB' }, /MAX_UPLOAD_BYTES/],
    [{ TLS_CERT_FILE: '/etc/cert.pem' }, /TLS_CERT_FILE and TLS_KEY_FILE/]
  ]
  for (const [env, message] of cases) {
    const err = t.throws(() => loadConfig(env), message, JSON.stringify(env))
    t.ok(err instanceof ConfigError, 'a ConfigError, which the server prints without a stack')
  }
})

t.test('two bad values are both named, once each', async t => {
  const err = t.throws(() => loadConfig({ ENVIRONMENT: 'prod', PORT: 'abc' })) as Error
  t.match(err.message, /ENVIRONMENT must be one of/)
  t.match(err.message, /PORT must be integer/)
  t.equal(err.message.match(/ENVIRONMENT/g)?.length, 1)
})

t.test('production refuses to start without JWT_SECRET', async t => {
  t.throws(() => loadConfig({ ENVIRONMENT: 'production', TRUST_PROXY: '127.0.0.1' }), /JWT_SECRET is required/)
  t.ok(loadConfig({ ENVIRONMENT: 'production', TRUST_PROXY: '127.0.0.1', JWT_SECRET: SECRET }).production)
})

t.test('a JWT_SECRET shorter than 32 characters is refused everywhere, once, in words', async t => {
  const once = /^invalid configuration: JWT_SECRET must be at least 32 characters$/
  t.throws(() => loadConfig({ JWT_SECRET: 'x'.repeat(31) }), once)
  t.throws(() => loadConfig({ ENVIRONMENT: 'production', TRUST_PROXY: '127.0.0.1', JWT_SECRET: 'x'.repeat(31) }), once)
  t.equal(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).jwtSecret, 'x'.repeat(32), '32 characters is enough')
})

t.test('the password hashing cost: 15 by default, never below it outside ENVIRONMENT=test', async t => {
  const prod = { ENVIRONMENT: 'production', JWT_SECRET: SECRET, TRUST_PROXY: '127.0.0.1' }
  t.equal(loadConfig(prod).PASSWORD_HASH_COST, 15)
  t.equal(loadConfig({ ...prod, PASSWORD_HASH_COST: '17' }).PASSWORD_HASH_COST, 17, '17 is the highest')
  t.throws(() => loadConfig({ PASSWORD_HASH_COST: '18' }), /PASSWORD_HASH_COST must be <= 17/)
  for (const ENVIRONMENT of ['production', 'staging', 'local']) {
    t.throws(
      () => loadConfig({ ...prod, ENVIRONMENT, PASSWORD_HASH_COST: '14' }),
      /PASSWORD_HASH_COST below 15 is for ENVIRONMENT=test only/,
      `14 refused in ${ENVIRONMENT}`
    )
  }
  t.equal(loadConfig({ ENVIRONMENT: 'test', PASSWORD_HASH_COST: '10' }).PASSWORD_HASH_COST, 10, 'a test run may hash cheaply')
  t.throws(() => loadConfig({ ENVIRONMENT: 'test', PASSWORD_HASH_COST: '9' }), /PASSWORD_HASH_COST must be >= 10/)
})

t.test('production needs TLS files or a trusted proxy', async t => {
  t.throws(() => loadConfig({ ENVIRONMENT: 'production', JWT_SECRET: SECRET }), /TLS_CERT_FILE|TRUST_PROXY/)
  t.ok(loadConfig({ ENVIRONMENT: 'production', JWT_SECRET: SECRET, TLS_CERT_FILE: '/c', TLS_KEY_FILE: '/k' }).production)
})

t.test('the plugin alone decorates a bare Fastify with the config', async t => {
  const config = testConfig({ PORT: '4000' })
  const app = Fastify()
  await app.register(configPlugin, { config })
  await whileMigrating(() => app.ready())
  t.teardown(() => app.close())
  t.equal(app.config.PORT, 4000)
  t.equal(app.config, config)
})

t.test('the server process refuses to start in production without JWT_SECRET, naming it', async t => {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    ENVIRONMENT: 'production',
    TRUST_PROXY: '127.0.0.1',
    PORT: '0',
    DATA_DIR: '/tmp/roja-config-test'
  }
  // the built server npm start runs (npm test builds it first)
  const child = spawn(process.execPath, ['dist/server.js'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', c => {
    output += String(c)
  })
  child.stderr.on('data', c => {
    output += String(c)
  })
  const code = await new Promise<number | null>(resolve => child.on('exit', resolve))
  keepLog('server', output)
  t.not(code, 0, 'exits non-zero')
  t.equal(code, 78, 'EX_CONFIG')
  t.match(output, /JWT_SECRET/)
  t.notMatch(output, /\n\s+at /, 'a message, not a stack trace')
})

t.test('origins, URLs and hosts are checked as such, naming the bad item', async t => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ ALLOWED_CORS_ORIGINS: 'not a url' }, /ALLOWED_CORS_ORIGINS must be a comma list of origins .*: "not a url" is not/],
    [
      { ALLOWED_CORS_ORIGINS: 'https://app.example.com,https://b.example.com/path' },
      /ALLOWED_CORS_ORIGINS .*"https:\/\/b\.example\.com\/path" is not/
    ],
    [{ ALLOWED_CORS_ORIGINS: 'ftp://files.example.com' }, /ALLOWED_CORS_ORIGINS/],
    [{ ALLOWED_MEDIA_HOSTS: 'cdn.example.com,https://media.example.com' }, /ALLOWED_MEDIA_HOSTS .*"https:\/\/media\.example\.com" is not/],
    [{ MEDIA_PUBLIC_URL: 'http://' }, /MEDIA_PUBLIC_URL must be an http:\/\/ or https:\/\/ URL/],
    [{ HOST: 'not a host' }, /HOST must be a host name or IP address/],
    [{ REDIS_URL: 'redis://[bad' }, /REDIS_URL/],
    [{ LOG_FORMAT: 'xml' }, /LOG_FORMAT must be one of json, pretty/]
  ]
  for (const [env, message] of cases) t.throws(() => loadConfig(env), message, JSON.stringify(env))
  const good = loadConfig({
    ALLOWED_CORS_ORIGINS: '*, https://App.Example.com:8443',
    ALLOWED_MEDIA_HOSTS: 'cdn.example.com:8080,media.example.com',
    HOST: '::1',
    MEDIA_PUBLIC_URL: 'https://media.example.com/'
  })
  t.same(good.corsOrigins, ['*', 'https://app.example.com:8443'], 'origins kept as browsers send them')
  t.same(good.allowedMediaHosts, ['cdn.example.com:8080', 'media.example.com'])
})

t.test('every problem is reported at once: schema and cross-variable rules together', async t => {
  const err = t.throws(() => loadConfig({ ENVIRONMENT: 'production', PORT: 'abc', ALLOWED_CORS_ORIGINS: 'not a url', TLS_CERT_FILE: '/c' })) as Error
  for (const name of [/PORT must be integer/, /ALLOWED_CORS_ORIGINS/, /JWT_SECRET is required/, /TLS_CERT_FILE and TLS_KEY_FILE go together/]) { t.match(err.message, name) }
  t.equal(err.message.split('; ').length, 4, 'four problems, each once')
})

t.test('STARTUP_TIMEOUT_MS: five minutes by default, at least a second, and the server\'s plugin timeout', async t => {
  t.equal(loadConfig({}).STARTUP_TIMEOUT_MS, 300000)
  t.equal(loadConfig({ STARTUP_TIMEOUT_MS: '1000' }).STARTUP_TIMEOUT_MS, 1000)
  t.throws(() => loadConfig({ STARTUP_TIMEOUT_MS: '999' }), /STARTUP_TIMEOUT_MS/)
  t.equal(serverOptions(loadConfig({ STARTUP_TIMEOUT_MS: '45000' })).pluginTimeout, 45000)
})

t.test('SHUTDOWN_DRAIN_MS defaults to 0 and must end inside SHUTDOWN_GRACE_MS', async t => {
  t.equal(loadConfig({}).SHUTDOWN_DRAIN_MS, 0)
  t.equal(loadConfig({ SHUTDOWN_DRAIN_MS: '9999', SHUTDOWN_GRACE_MS: '10000' }).SHUTDOWN_DRAIN_MS, 9999)
  const err = t.throws(
    () => loadConfig({ SHUTDOWN_DRAIN_MS: '10000', SHUTDOWN_GRACE_MS: '10000' }),
    /SHUTDOWN_DRAIN_MS must be shorter than SHUTDOWN_GRACE_MS/
  )
  t.ok(err instanceof ConfigError)
  t.throws(() => loadConfig({ SHUTDOWN_DRAIN_MS: '-1' }), /SHUTDOWN_DRAIN_MS/)
})
