import { spawn } from 'node:child_process'
import { once } from 'node:events'
import t from 'tap'
import { BatchedLineWriter } from '../src/batched-log-writer.js'

const turn = () => new Promise(resolve => setImmediate(resolve))

t.test('the lines of one event-loop turn go out in one write, in order; the next turn\'s in the next', async (t) => {
  const writes: string[] = []
  const stream = new BatchedLineWriter({ write: (text) => writes.push(text) })
  stream.write('a\n')
  stream.write('b\n')
  stream.write('c\n')
  t.same(writes, [], 'nothing is written while the turn runs')
  await turn()
  t.same(writes, ['a\n' + 'b\n' + 'c\n'])
  stream.write('d\n')
  await turn()
  t.same(writes, ['a\nb\nc\n', 'd\n'], 'a lone line is written as it is, at the end of its turn')
  await turn()
  stream.flush()
  t.same(writes, ['a\nb\nc\n', 'd\n'], 'a turn that logged nothing writes nothing')
})

// A child process logging through the real stdout: run with tsx, as the tests are.
function child (script: string) {
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `import { stdoutLines } from './src/batched-log-writer.ts'\n${script}`],
    { cwd: process.cwd(), env: { PATH: process.env.PATH }, stdio: ['pipe', 'pipe', 'inherit'] })
}

t.test('a quiet process\'s line reaches stdout at once, not when the process ends', async (t) => {
  // The child exits only when told to, after the parent has read its line: a line held back
  // until exit would never arrive, and the test would time out.
  const proc = child(`stdoutLines().write('first\\n'); process.stdin.once('data', () => process.exit(0))`)
  let out = ''
  proc.stdout.setEncoding('utf8')
  while (!out.includes('first\n')) out += (await once(proc.stdout, 'data'))[0]
  proc.stdin.write('go\n')
  const [code] = await once(proc, 'exit')
  t.equal(code, 0)
  t.equal(out, 'first\n')
})

t.test('lines logged in the turn that exits are written before the process ends', async (t) => {
  const proc = child(`const s = stdoutLines(); for (let i = 0; i < 1000; i++) s.write(\`line \${i}\\n\`); process.exit(3)`)
  let out = ''
  proc.stdout.setEncoding('utf8')
  proc.stdout.on('data', (chunk: string) => { out += chunk })
  const [code] = await once(proc, 'close') // exited, and its stdout read to the end
  t.equal(code, 3)
  const lines = out.split('\n').filter(Boolean)
  t.equal(lines.length, 1000, 'every line')
  t.equal(lines[0], 'line 0')
  t.equal(lines[999], 'line 999', 'in order, the last one included')
})
