import { runInNewContext } from 'node:vm'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t, { type Test } from 'tap'
import { asciiOnly, writeBundle } from '../scripts/bundle.js'
import { freePort } from '../scripts/proc.js'
import { PG_URL } from './helper.js'
import { collectOutput, waitForOutput } from './child-output.js'
import { keepLog, recordSecret } from './log-capture.js'
import { ROOT } from '../src/package-info.js'

/**
 * `npm start` runs the server bundled into one file (scripts/bundle.ts). Built here as
 * `npm run build` builds it (writeBundle), under dist/ (the server finds package.json above it), and run
 * on each database in one go (npm test runs this file once): SQLite, and PostgreSQL when
 * TEST_DATABASE_URL is set, as the suite runs on it then.
 */
const OUT = join(ROOT, 'dist', `bundle-test-${randomBytes(4).toString('hex')}`)
t.teardown(() => rmSync(OUT, { recursive: true, force: true }))
const bundled = writeBundle(OUT)

/** The packages a bundle file imports at its top, each by its name (`node:` built-ins left out). */
function staticImports (file: string): string[] {
  const text = readFileSync(join(OUT, file), 'utf8')
  return [...text.matchAll(/^import\s+(?:[^'"]*?\s+from\s+)?["']([^"']+)["'];?$/gm)]
    .map(m => m[1])
    .filter(s => !s.startsWith('node:') && !s.startsWith('./'))
}

// Loaded by the code only when used: a static import in the main file would load them at every start.
const WHEN_USED = /^(nodemailer|ioredis|file-type|@fastify\/otel|@opentelemetry\/.*)$/

t.test('the bundle inlines what it can: no package that finds files by __dirname, nothing loaded before it is used', async t => {
  await bundled
  const files = readdirSync(OUT).filter(f => f.endsWith('.js'))
  const text = (file: string) => readFileSync(join(OUT, file), 'utf8')
  // __dirname does not exist in an ES module: code that reads it must stay in its package
  t.same(
    files.filter(f => /\b__(dirname|filename)\b/.test(text(f))),
    [],
    `none of the ${files.length} files reads __dirname or __filename`
  )
  // the packages' comments hold dashes and section signs: left in, V8 keeps the file as two bytes a character
  t.same(
    files.filter(f => /[^\x00-\x7f]/.test(text(f))),
    [],
    'every file is ASCII'
  )
  const main = staticImports('server.js')
  t.same(
    main.filter(p => WHEN_USED.test(p)),
    [],
    'the main file imports no package the code loads only when used'
  )
  t.notOk(
    main.some(p => p === 'kysely' || p === 'fastify' || p.startsWith('@sinclair/typebox')),
    'Kysely, Fastify and TypeBox are inside the bundle'
  )
  t.ok(
    text('server.js').includes('__require("pino")'),
    'pino stays a package, required by Fastify (its transports start workers from files beside it)'
  )
  // esbuild marks each module's code with its path: the server's own modules come from src/, plugins/ and schemas/ only
  const own = [...files.flatMap(f => text(f).match(/^\/\/ [\w.-]+\/\S+\.ts$/gm) ?? [])].map(line => line.slice(3))
  t.same(
    own.filter(path => !/^(src|plugins|schemas)\//.test(path)),
    [],
    `none of its ${own.length} own modules is tooling (scripts/, test/, bench/)`
  )
  t.ok(own.includes('src/db/migrations/2026_11_21_0001_initial.ts'), 'the migrations are in it')
  const tracing = files.find(f => f.startsWith('tracing-'))
  t.ok(tracing, 'tracing is a chunk of its own')
  t.ok(
    staticImports(tracing!).some(p => p.startsWith('@opentelemetry/')),
    'the tracing chunk is where OpenTelemetry is imported'
  )
})

t.test('asciiOnly escapes what is past ASCII, and a string keeps its value', async t => {
  t.equal(asciiOnly('/** 64\u201371 \u2014 \u00a7 */ x'), '/** 64\\u{2013}71 \\u{2014} \\u{a7} */ x', 'comments: every such character escaped')
  t.equal(asciiOnly('plain ascii\n'), 'plain ascii\n', 'ASCII unchanged')
  const literal = '"d\u00e9j\u00e0 \ud83d\ude00"'
  t.equal(runInNewContext(asciiOnly(literal)), runInNewContext(literal), 'a string literal means the same string')
})

const databases = process.env.TEST_DATABASE_URL ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)
for (const dialect of databases) {
  t.test(`the bundled server serves the API on ${dialect === 'postgres' ? 'PostgreSQL' : 'SQLite'}: sign-up, a token, a read`, async t => {
    await bundled
    const dataDir = mkdtempSync(join(tmpdir(), 'roja-bundle-'))
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
    const databaseUrl = dialect === 'postgres' ? await freshPostgresDatabase(t) : `sqlite:${join(dataDir, 'roja.sqlite')}`
    const port = await freePort()
    const child = spawn(process.execPath, [join(OUT, 'server.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        MAX_EVENT_LOOP_DELAY_MS: '60000'
      },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    const output = collectOutput(child)
    const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    })
    t.teardown(() => keepLog('bundle', output.text))
    // a deadline, not a measurement: a start on a busy machine can take many seconds
    await waitForOutput(output, /Server listening at/, 120_000)
    const base = `http://127.0.0.1:${port}`
    const health = await fetch(`${base}/health`)
    t.equal(health.status, 200, '/health: the database answers')
    const version = (await (await fetch(`${base}/version`)).json()) as { version: string }
    t.equal(version.version, JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version, '/version reads package.json from the bundle')

    const post = (url: string, body: unknown) =>
      fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const invalid = await post('/v1/profiles', { username: 'ada' })
    t.equal(invalid.status, 422, 'validation runs')
    t.equal(invalid.headers.get('content-type'), 'application/problem+json; charset=utf-8')
    const password = 'correct horse battery staple'
    const signUp = await post('/v1/profiles', { first_name: 'Ada', username: 'ada', email: 'ada@example.com', password })
    t.equal(signUp.status, 201, 'sign-up writes a user and profile')
    const token = await post('/v1/auth/token', { username: 'ada', password })
    t.equal(token.status, 200, 'the password is checked and a token signed')
    const { access_token: accessToken } = (await token.json()) as { access_token: string }
    recordSecret('access_token', accessToken) // the suite's log scan looks for it in this server's log
    const mine = await fetch(`${base}/v1/users/me/posts`, { headers: { authorization: `Bearer ${accessToken}` } })
    t.equal(mine.status, 200, 'the token authenticates a read')
    t.same(await mine.json(), { posts: [], total: 0 })

    child.kill('SIGTERM')
    t.equal(await exited, 0, 'SIGTERM: a clean exit')
  })
}

/** A database of its own on the test server, dropped at teardown. */
async function freshPostgresDatabase (t: Test): Promise<string> {
  const name = `roja_bundle_${randomBytes(6).toString('hex')}`
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: PG_URL })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await run(`create database ${name}`)
  t.teardown(() => run(`drop database if exists ${name} with (force)`))
  const url = new URL(PG_URL)
  url.pathname = `/${name}`
  return url.href
}
