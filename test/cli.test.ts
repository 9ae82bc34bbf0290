import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { Writable } from 'node:stream'
import { promisify } from 'node:util'
import t from 'tap'
import { createDb } from '../src/db/dialect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { nowIso } from '../src/db/time.js'
import { seed } from '../scripts/seed.js'

const run = promisify(execFile)

/** Runs `npm run cli -- …` as the operator would (node --import tsx src/cli.ts) against one SQLite file. */
async function cli (url: string, ...args: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      env: { PATH: process.env.PATH, DATABASE_URL: url, ENVIRONMENT: 'test', LOG_LEVEL: 'silent' }
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number, stdout: string, stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

t.test('operator commands', async (t) => {
  const dir = `/tmp/roja-cli-${randomBytes(6).toString('hex')}`
  const url = `sqlite:${dir}/roja.sqlite`
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const db = createDb(url)
  t.teardown(() => db.destroy())
  await migrateToLatest(db)
  const now = nowIso()
  await db.insertInto('user').values({
    id: '7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10', username: 'ada', email: 'ada@example.com', password_hash: 'x',
    is_active: true, is_creator: false, created_at: now, updated_at: now
  }).execute()
  const flags = async () => {
    const row = await db.selectFrom('user').select(['is_creator', 'is_active']).where('username', '=', 'ada').executeTakeFirstOrThrow()
    return { is_creator: Boolean(row.is_creator), is_active: Boolean(row.is_active) }
  }

  t.test('creator grant makes a creator; a second grant changes nothing', async (t) => {
    const res = await cli(url, 'creator', 'grant', 'ada')
    t.equal(res.code, 0)
    t.match(res.stdout, /ada is now a creator/)
    t.same(await flags(), { is_creator: true, is_active: true })
    const again = await cli(url, 'creator', 'grant', ' ADA ')
    t.equal(again.code, 0, 'the username is normalised like at sign-up')
    t.match(again.stdout, /already a creator, nothing changed/)
  })

  t.test('creator revoke', async (t) => {
    const res = await cli(url, 'creator', 'revoke', 'ada')
    t.equal(res.code, 0)
    t.match(res.stdout, /ada is no longer a creator/)
    t.same(await flags(), { is_creator: false, is_active: true })
  })

  t.test('user ban and unban', async (t) => {
    const ban = await cli(url, 'user', 'ban', 'ada')
    t.equal(ban.code, 0)
    t.match(ban.stdout, /ada is now banned/)
    t.same(await flags(), { is_creator: false, is_active: false })
    const unban = await cli(url, 'user', 'unban', 'ada')
    t.equal(unban.code, 0)
    t.match(unban.stdout, /ada is no longer banned/)
    t.same(await flags(), { is_creator: false, is_active: true })
  })

  t.test('an unknown user exits 1 with a clear message', async (t) => {
    for (const args of [['creator', 'grant', 'ghost'], ['user', 'ban', 'ghost']]) {
      const res = await cli(url, ...args)
      t.equal(res.code, 1, args.join(' '))
      t.match(res.stderr, /no user named ghost/)
    }
  })

  t.test('bad usage exits 2 and prints the usage', async (t) => {
    const none = await cli(url)
    t.equal(none.code, 2)
    t.match(none.stderr, /creator grant <username>/)
    t.match(none.stderr, /user unban <username>/)
    const unknown = await cli(url, 'user', 'delete', 'ada')
    t.equal(unknown.code, 2)
    const missing = await cli(url, 'creator', 'grant')
    t.equal(missing.code, 2)
    t.match(missing.stderr, /usage: npm run cli -- creator grant <username>/)
    const extra = await cli(url, 'user', 'ban', 'ada', 'bob')
    t.equal(extra.code, 2)
    t.same(await flags(), { is_creator: false, is_active: true }, 'nothing changed')
  })
})

t.test('--help exits 0, for the CLI and for every command', async (t) => {
  const url = 'sqlite::memory:'
  const all = await cli(url, '--help')
  t.equal(all.code, 0)
  t.match(all.stdout, /creator grant <username>\s+lets the user publish/)
  t.match(all.stdout, /same\s+settings as the server/, 'says the CLI must use the server\'s database')
  for (const command of ['creator grant', 'creator revoke', 'user ban', 'user unban']) {
    const res = await cli(url, ...command.split(' '), '--help')
    t.equal(res.code, 0, command)
    t.match(res.stdout, new RegExp(`usage: npm run cli -- ${command} <username>`))
  }
  const group = await cli(url, 'user', '-h')
  t.equal(group.code, 0)
  t.match(group.stdout, /user ban/)
  t.notMatch(group.stdout, /creator grant/, 'a group shows its own commands')
  const unknown = await cli(url, 'shop', '--help')
  t.equal(unknown.code, 2, 'help for an unknown command is bad usage')
})

t.test('npm run seed: progress without a terminal, then accounts ready to sign in with', async (t) => {
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
  const bad = await run(process.execPath, ['--import', 'tsx', 'scripts/seed.ts', '--posts', 'many']).catch(e => e)
  t.equal(bad.code, 2, 'bad usage exits 2')
  const help = await run(process.execPath, ['--import', 'tsx', 'scripts/seed.ts', '--help'])
  t.match(help.stdout, /usage: npm run seed -- --posts <n>/)
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
  await seed(db, { posts: 3000, users: 10, progress: out, progressEveryMs: 0 })
  const posts = lines.filter(l => l.startsWith('posts:'))
  t.same(posts, ['posts: 0/3000 (0 %)\n', 'posts: 1000/3000 (33 %)\n', 'posts: 2000/3000 (66 %)\n', 'posts: 3000/3000 (100 %)\n'])
})
