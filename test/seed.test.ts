import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { Writable } from 'node:stream'
import { promisify } from 'node:util'
import t from 'tap'
import { createDb } from '../src/db/dialect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { main, seed } from '../scripts/seed.js'

const run = promisify(execFile)

t.test('npm run seed, a process of its own: progress without a terminal, then accounts ready to sign in with', async (t) => {
  const dir = `/tmp/roja-seed-${randomBytes(6).toString('hex')}`
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const res = await run(process.execPath, ['--import', 'tsx', 'scripts/seed.ts', '--posts', '300', '--users', '12'], {
    env: { PATH: process.env.PATH, DATA_DIR: dir, ENVIRONMENT: 'test' }
  })
  t.match(res.stderr, /^users: 0\/12 \(0 %\)$/m, 'a line when a task starts')
  t.match(res.stderr, /^posts: 300\/300 \(100 %\)$/m, 'and when it ends')
  t.match(res.stdout, /seeded 12 users \(3 creators\) and 300 posts/)
  t.match(res.stdout, /every seeded user's password: roja-seed-password/)
  const creator = /^ {2}(\S+) {2}creator$/m.exec(res.stdout)?.[1]
  const reader = /^ {2}(\S+) {2}not a creator$/m.exec(res.stdout)?.[1]
  t.ok(creator && reader, 'names a creator and a user who is not')
  const db = createDb(`sqlite:${dir}/roja.sqlite`)
  t.teardown(() => db.destroy())
  const rows = await db.selectFrom('user').select(['username', 'is_creator']).where('username', 'in', [creator!, reader!]).execute()
  t.same(rows.map(r => [r.username, Boolean(r.is_creator)]).sort(), [[creator, true], [reader, false]].sort(), 'the accounts exist as described')
})

t.test('npm run seed: usage (the same main(), in this process)', async (t) => {
  const printed = t.capture(console, 'log')
  const refused = t.capture(console, 'error')
  t.equal(await main(['--posts', 'many']), 2, 'bad usage exits 2')
  t.match(refused().map(c => c.args.join(' ')).join('\n'), /usage: npm run seed -- --posts <n>/, 'and says how to call it')
  t.equal(await main(['--help']), 0)
  t.match(printed().map(c => c.args.join(' ')).join('\n'), /usage: npm run seed -- --posts <n>/)
})

t.test('the seeder prints a progress line every few seconds when not on a terminal', async (t) => {
  const dir = `/tmp/roja-seed-${randomBytes(6).toString('hex')}`
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const db = createDb(`sqlite:${dir}/roja.sqlite`)
  t.teardown(() => db.destroy())
  await migrateToLatest(db)
  const lines: string[] = []
  const out = new Writable({ write (chunk, _enc, done) { lines.push(String(chunk)); done() } })
  // every 0 ms: each batch (1000 posts) is a line; at the default the interval is 5 s
  await seed(db, { posts: 3000, users: 10, progress: out, progressEveryMs: 0, hashCost: 10 })
  const posts = lines.filter(l => l.startsWith('posts:'))
  t.same(posts, ['posts: 0/3000 (0 %)\n', 'posts: 1000/3000 (33 %)\n', 'posts: 2000/3000 (66 %)\n', 'posts: 3000/3000 (100 %)\n'])
})
