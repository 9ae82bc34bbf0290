import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { freePort } from '../scripts/proc.js'
import { collectOutput, type Output, waitForOutput } from './child-output.js'
import { keepLog, recordIssued } from './log-capture.js'
import { ROOT } from '../src/package-info.js'

/**
 * The newcomer's path, taken from the README itself: the server started exactly as Quick start
 * says (`npm start`), the "First requests" blocks run as written, and the PID that `npm start`
 * reports signalled the way a process manager (SIGTERM) or a terminal's Ctrl-C (SIGINT to the
 * whole process group) does. `npm start` builds once, for the walkthrough; the Ctrl-C case needs
 * a server of its own and starts the same script without building again (npm's --ignore-scripts
 * skips prestart only).
 */
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
// The first start may compile the whole server on a busy machine: a deadline, not a measurement.
const START_DEADLINE_MS = 240_000
const GRACE_MS = 10_000
const run = promisify(execFile)

/** The ```sh blocks of one README section (up to the next `## ` heading). */
function shellBlocks (heading: string): string[] {
  const from = README.indexOf(`\n## ${heading}\n`)
  if (from < 0) throw new Error(`README has no "## ${heading}" section`)
  const to = README.indexOf('\n## ', from + 1)
  const section = README.slice(from, to < 0 ? undefined : to)
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map(m => m[1])
}

interface Started {
  npm: ChildProcess
  port: number
  dataDir: string
  output: Output
  serverPid: number
  exited: Promise<{ code: number | null; signal: string | null }>
}

async function npmStart (t: Test, { build = true } = {}): Promise<Started> {
  const dataDir = mkdtempSync(join(tmpdir(), 'roja-readme-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  // detached: npm leads a process group of its own, as a shell's foreground job does.
  const npm = spawn('npm', build ? ['start'] : ['start', '--ignore-scripts'], {
    cwd: ROOT,
    detached: true,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      DATA_DIR: dataDir,
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
      MAX_EVENT_LOOP_DELAY_MS: '60000'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output = collectOutput(npm)
  const exited = new Promise<{ code: number | null; signal: string | null }>(resolve => npm.on('exit', (code, signal) => resolve({ code, signal })))
  t.teardown(() => {
    try {
      process.kill(-npm.pid!, 'SIGKILL')
    } catch {}
  })
  t.teardown(() => keepLog('npm-start', output.text))
  const line = await waitForOutput(output, /\{[^\n]*"msg":"Server listening at [^\n]*\}/, START_DEADLINE_MS)
  return { npm, port, dataDir, output, serverPid: JSON.parse(line).pid, exited }
}

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function refuses (port: number): Promise<boolean> {
  return new Promise(resolve => {
    const socket = connect(port, '127.0.0.1')
    socket.on('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.on('error', () => resolve(true))
  })
}

async function stopsGracefully (t: Test, started: Started) {
  const { code, signal } = await started.exited
  t.equal(signal, null, 'npm was not killed by the signal')
  t.equal(code, 0, 'npm start exits 0, as the server did')
  t.match(started.output.text, /"msg":"closing: finishing in-flight requests"/)
  t.match(started.output.text, /"msg":"closed: in-flight requests answered, database closed"/, 'shutdown logs when it is done')
  t.notMatch(started.output.text, /second signal|killed by timeout/)
  t.notOk(alive(started.serverPid), 'the node server is gone, not left behind')
  t.ok(await refuses(started.port), 'nothing listens on the port any more')
}

t.test('Quick start is the two commands: install and serve, then the tests on their own', async t => {
  const commands = shellBlocks('Quick start').map(block =>
    block
      .split('\n')
      .map(l => l.replace(/#.*/, '').trim())
      .filter(Boolean)
  )
  t.same(commands, [['npm ci && npm start'], ['npm test']])
})

t.test('the README walkthrough, run as written against `npm start`, then SIGTERM to the PID npm start reports', async t => {
  const started = await npmStart(t)
  const base = `http://127.0.0.1:${started.port}`
  t.match(started.output.text, new RegExp(`API at ${base}/v1, docs at ${base}/docs`), 'the start-up line names the API and the docs')

  const blocks = shellBlocks('First requests')
  t.equal(blocks.length, 3, 'sign-up and token, creator, post + list + upload')
  const script = blocks.join('\n').replaceAll('http://127.0.0.1:3000', base)
  t.equal(script.includes(':3000'), false, 'every command talks to the started server')
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: started.dataDir }
  // mails of someone else's sign-up already in the folder: the walkthrough must take ada's own link
  mkdirSync(join(started.dataDir, 'mail'), { recursive: true })
  for (const id of ['0-older', 'z-other']) {
    writeFileSync(
      join(started.dataDir, 'mail', `${id}.eml`),
      `To: bob@example.com\r\nSubject: Confirm\r\n\r\nhttp://127.0.0.1:1/verify-email?token=${id}\r\n`
    )
  }
  // the token the walkthrough keeps in TOKEN, on stderr, for the suite-wide log scan
  const recorded = `${script}\nprintf '{"access_token":"%s"}\\n' "$TOKEN" >&2\n`
  const { stdout, stderr } = await run('bash', ['-euo', 'pipefail', '-c', recorded], { cwd: ROOT, env, maxBuffer: 1 << 24 })
  recordIssued(stderr)
  t.match(stdout, /"username":"ada"/, 'signed up')
  t.match(stdout, /Your e-mail address is confirmed/, 'verified by the mailed link')
  t.match(stdout, /ada is now a creator/, "the CLI reached the server's database")
  t.equal(stdout.match(/"title":"Hello, Roja"/g)?.length, 2, 'the post, created and then in the list')
  const upload = JSON.parse(stdout.trim().split('\n').at(-1)!) as { url: string; content_type: string; sha256: string }
  t.match(upload, { content_type: 'text/plain', sha256: /^[0-9a-f]{64}$/ }, 'uploaded')
  t.equal((await fetch(upload.url)).status, 200, 'and served at its url')
  const list = (await (await fetch(`${base}/v1/posts`)).json()) as { total: number }
  t.equal(list.total, 1, 'exactly one post exists')

  process.kill(started.npm.pid!, 'SIGTERM')
  await stopsGracefully(t, started)
})

t.test('Ctrl-C (SIGINT to the process group: npm and node, and npm passes it on) stops it once, gracefully', async t => {
  const started = await npmStart(t, { build: false })
  t.equal((await fetch(`http://127.0.0.1:${started.port}/health`)).status, 200)
  process.kill(-started.npm.pid!, 'SIGINT')
  await stopsGracefully(t, started)
})
