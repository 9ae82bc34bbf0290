import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { freePort, listening } from '../scripts/proc.js'
import { collectOutput, waitForOutput } from './child-output.js'
import { keepLog } from './log-capture.js'
import { ROOT } from '../src/package-info.js'

/**
 * `npm run dev`, stopped the way an IDE or a process manager stops it: SIGTERM to the PID it
 * started (npm's), not to the whole group. Nothing of it may stay behind: no process of its group,
 * nothing listening. (`npm start` is held by test/readme.test.ts, `npm run fleet` by the fleet test.)
 */
const START_DEADLINE_MS = 120_000

function groupAlive (pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

t.test('SIGTERM to `npm run dev` stops the server: no process of its group left, nothing listening', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'roja-dev-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  const npm = spawn('npm', ['run', 'dev'], {
    cwd: ROOT,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), DATA_DIR: dataDir, MAX_EVENT_LOOP_DELAY_MS: '60000' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output = collectOutput(npm)
  const exited = once(npm, 'exit')
  t.teardown(() => { try { process.kill(-npm.pid!, 'SIGKILL') } catch {} })
  t.teardown(() => keepLog('npm-run-dev', output.text))
  await waitForOutput(output, new RegExp(`Server listening at http://127\\.0\\.0\\.1:${port}`), START_DEADLINE_MS)
  t.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200, 'it serves')

  process.kill(npm.pid!, 'SIGTERM')
  await exited
  await waitForOutput(output, /closed: in-flight requests answered, database closed/, 15_000)
  // The group leader's exit can come a moment before its children's: wait on the group, bounded.
  for (let i = 0; i < 100 && groupAlive(npm.pid!); i++) await new Promise(resolve => setTimeout(resolve, 50))
  t.notOk(groupAlive(npm.pid!), 'no process of `npm run dev` is left (tsx, node, esbuild)')
  t.notOk(await listening(port), 'nothing listens on the port')
})
