import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { connect, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { freePort } from '../scripts/proc.js'
import { collectOutput, waitForOutput } from './child-output.js'
import { keepLog } from './log-capture.js'
import { ROOT } from '../src/package-info.js'

// what npm start runs, as npm test builds it before any test
const SERVER = 'dist/server.js'
// A start on a busy machine compiles every schema first; this is a deadline, not a measurement.
const START_DEADLINE_MS = 120_000

function canConnect (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.on('connect', () => { socket.destroy(); resolve(true) })
    socket.on('error', () => resolve(false))
  })
}

/** Fastify closes the listener a moment after the close starts: poll until connections are refused (ms: a deadline, not a measure). */
async function refusesWithin (port: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (!await canConnect(port)) return true
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return false
}

function readAll (socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (c) => { text += c })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
  })
}

t.test('SIGTERM: stops accepting, finishes the in-flight request, closes the database, exits 0', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'roja-server-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  const child = spawn(process.execPath, [SERVER], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      // debug: the arrival line tells the test the in-flight request has reached the server
      LOG_LEVEL: 'debug',
      SHUTDOWN_GRACE_MS: '60000',
      // the in-flight request stays silent while the test waits on the server, for more than the
      // default 30 s on a loaded CI machine: the test is about shutdown, not idle connections
      IDLE_TIMEOUT_MS: '240000',
      // the start itself blocks the loop; the test is about shutdown, not load shedding
      MAX_EVENT_LOOP_DELAY_MS: '60000'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output = collectOutput(child)
  const exited = new Promise<{ code: number | null, signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  t.teardown(() => keepLog('server', output.text))

  await waitForOutput(output, /Server listening at http:\/\/127\.0\.0\.1:\d+/, START_DEADLINE_MS)
  const health = await fetch(`http://127.0.0.1:${port}/version`)
  t.equal(health.status, 200, 'serves before the signal')
  // A quiet server's one line must not wait for more traffic or for the exit (the deadline is for a
  // busy machine, not a measurement: no traffic follows and the server runs on).
  await t.resolves(waitForOutput(output, /"url":"\/version"[^\n]*"request completed"/, START_DEADLINE_MS),
    'a quiet server\'s request line reaches stdout with no more traffic')
  t.ok(existsSync(join(dataDir, 'roja.sqlite')), 'the SQLite file is under DATA_DIR')

  // An in-flight request: headers and half of the body now, the rest after the signal.
  const slow = connect(port, '127.0.0.1')
  const answer = readAll(slow)
  const body = '{"a":"012345678901"}'
  slow.write(`POST /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 6)}`)
  await waitForOutput(output, /"url":"\/nowhere".*incoming request/, START_DEADLINE_MS)

  child.kill('SIGTERM')
  await waitForOutput(output, /closing: finishing in-flight requests/, START_DEADLINE_MS)
  t.equal(await refusesWithin(port, START_DEADLINE_MS), true, 'no new connections once closing, while the in-flight request is still open')

  slow.end(body.slice(6))
  const response = await answer
  t.match(response, /^HTTP\/1\.1 404 /, 'the in-flight request gets its full answer')
  t.match(response, /"code":"NotFound"/)

  const { code, signal } = await exited
  t.equal(signal, null, 'not killed by the signal')
  t.equal(code, 0, 'exits 0')
  t.notOk(existsSync(join(dataDir, 'roja.sqlite-wal')), 'the database was closed (SQLite removes the WAL file on a clean close)')
  t.notMatch(output.text, /killed by timeout/)
})

/** Starts the built server with `env` and returns its exit code and output once it stops. */
async function startFailure (env: Record<string, string>): Promise<{ code: number | null, output: string }> {
  const child = spawn(process.execPath, [SERVER], {
    cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe']
  })
  const output = collectOutput(child)
  const timer = setTimeout(() => child.kill('SIGKILL'), START_DEADLINE_MS)
  // 'close', not 'exit': the pipes are read to their end before the output is looked at
  const [code] = await once(child, 'close') as [number | null]
  clearTimeout(timer)
  keepLog('server', output.text)
  return { code, output: output.text }
}

/** The one fatal line of a failed start: readable, no stack. */
function fatalLine (t: Test, output: string) {
  const fatal = output.split('\n').filter(l => l.includes('"level":60'))
  t.equal(fatal.length, 1, `one fatal line:\n${output}`)
  t.notMatch(output, /\n\s+at /, 'no stack trace')
  return JSON.parse(fatal[0] ?? '{}') as { msg: string }
}

t.test('a start that fails says what failed in one line, with an exit code of its own', async (t) => {
  t.test('port already in use: 75', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'roja-server-'))
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
    const port = await freePort()
    const taken = createServer().listen(port, '127.0.0.1')
    await once(taken, 'listening')
    t.teardown(() => taken.close())
    const { code, output } = await startFailure({ PORT: String(port), DATA_DIR: dataDir })
    t.equal(code, 75)
    t.match(fatalLine(t, output), { msg: `cannot listen: 127.0.0.1:${port} is already in use` })
  })

  t.test('database unreachable: 69, naming its host and port (never its password)', async (t) => {
    const port = await freePort()
    const { code, output } = await startFailure({ PORT: '0', DATABASE_URL: `postgres://roja:s3cret@127.0.0.1:${port}/roja` })
    t.equal(code, 69)
    t.match(fatalLine(t, output), { msg: new RegExp(`^cannot reach the database at 127\\.0\\.0\\.1:${port}/roja`) })
    t.notMatch(output, /s3cret/)
  })

  t.test('a migration that fails: 65, naming the migration', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'roja-server-'))
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
    // A table the first migration creates is already there, as another program's would be.
    const db = new SQLite(join(dataDir, 'roja.sqlite'))
    db.exec('create table "user" (id integer)')
    db.close()
    const { code, output } = await startFailure({ PORT: '0', DATA_DIR: dataDir })
    t.equal(code, 65)
    t.match(fatalLine(t, output), { msg: /^migration 2026_11_21_0001_initial failed: .*already exists/ })
  })
})
