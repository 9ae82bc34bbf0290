import { spawn } from 'node:child_process'
import { once } from 'node:events'
import t from 'tap'
import { cpuMs, machineTicks, rssBytes, stolenShare } from '../scripts/proc.js'

/** The /proc readings the benchmark reports (CPU a request, idle RSS), checked on processes whose use is known. */

// Plain Node processes: without the test runner's NODE_OPTIONS, whose exit handlers a busy loop never lets run.
const PLAIN = { stdio: 'ignore' as const, env: { PATH: process.env.PATH } }

t.test('cpuMs counts the CPU a process burns, and only that', async t => {
  // one process spinning, one sleeping, side by side until the spinner has used 300 ms more CPU
  const spin = spawn(process.execPath, ['-e', 'for (;;);'], PLAIN)
  const idle = spawn(process.execPath, ['-e', "setTimeout(() => {}, 60_000); setImmediate(() => process.stdout.write('ready'))"], {
    ...PLAIN,
    stdio: ['ignore', 'pipe', 'ignore']
  })
  try {
    // past the sleeper's start-up (tens of milliseconds of CPU): it says so once its loop runs,
    // and then its reading stands still (a busy machine can pause it mid-start-up for longer)
    await once(idle.stdout!, 'data')
    const pause = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))
    let last: number | undefined = -1
    let now = cpuMs(idle.pid!)
    while (now !== last) {
      await pause(100)
      last = now
      now = cpuMs(idle.pid!)
    }
    const spin0 = cpuMs(spin.pid!)
    const idle0 = cpuMs(idle.pid!)
    t.ok(spin0 !== undefined && idle0 !== undefined, 'both read while they run')
    const start = Date.now()
    let spun = 0
    // a deadline for a busy machine, not a measurement
    while (spun < 300 && Date.now() - start < 30_000) {
      await pause(20)
      spun = cpuMs(spin.pid!)! - spin0!
    }
    const slept = cpuMs(idle.pid!)! - idle0!
    const wall = Date.now() - start
    t.ok(spun >= 300, `spinning: ${spun} ms of CPU in ${wall} ms`)
    // all threads count, but one busy thread cannot use more than the time that passed (and a tick)
    t.ok(spun <= wall + 30, `no more CPU than wall time: ${spun} ms in ${wall} ms`)
    t.ok(slept <= 20, `sleeping: ${slept} ms in the same ${wall} ms`)
  } finally {
    spin.kill('SIGKILL')
    idle.kill('SIGKILL')
    await Promise.all([once(spin, 'exit'), once(idle, 'exit')])
  }
})

t.test('a process that is gone reads as undefined CPU and 0 RSS', async t => {
  const child = spawn(process.execPath, ['-e', ''], PLAIN)
  await once(child, 'exit')
  // reaped by Node once it exited: its /proc entry is gone
  t.equal(cpuMs(child.pid!), undefined)
  t.equal(rssBytes(child.pid!), 0)
})

t.test("rssBytes reads this process's resident memory", async t => {
  const rss = rssBytes(process.pid)
  t.ok(rss > 10 * 1024 * 1024 && rss < process.memoryUsage().rss * 2, `${rss} bytes`)
})

t.test("machineTicks reads the machine's CPU time and its stolen part from /proc/stat's first line", async t => {
  // user nice system idle iowait irq softirq steal guest guest_nice: the guest fields are in user and nice already
  const stat = 'cpu  100 5 40 800 10 0 5 40 30 2\ncpu0 50 2 20 400 5 0 2 20 15 1\nintr 1 2 3\n'
  t.same(machineTicks(stat), { total: 1000, stolen: 40 })
  t.equal(machineTicks('cpu  1 2 3\n'), undefined, 'a line without the steal field reads as undefined')
  t.equal(machineTicks('cpu  1 2 3 4 5 6 7 x 9 10\n'), undefined, 'a field that is not a number reads as undefined')

  const before = { total: 1000, stolen: 40 }
  t.equal(stolenShare(before, { total: 1200, stolen: 90 }), 0.25, '50 of 200 ticks stolen')
  t.equal(stolenShare(before, { total: 1200, stolen: 40 }), 0, 'none stolen')
  t.equal(stolenShare(before, before), undefined, 'no time passed: no share')
  t.equal(stolenShare(undefined, before), undefined)

  // this machine: time passes while a process spins, and no more is stolen than passed
  const first = machineTicks()!
  const until = Date.now() + 200
  while (Date.now() < until);
  const share = stolenShare(first, machineTicks())
  t.ok(share !== undefined && share >= 0 && share <= 1, `stolen share over 200 ms: ${share}`)
})
