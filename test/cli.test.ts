import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { promisify } from 'node:util'
import t from 'tap'
import { createDb } from '../src/db/dialect.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { writeTimeIso } from '../src/db/clock.js'
import { main } from '../src/cli.js'

const run = promisify(execFile)

/** The CLI in this process (main answers the exit code), its console captured: a process start each is slow on a busy machine. */
async function cli (url: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env }
  Object.assign(process.env, { DATABASE_URL: url, ENVIRONMENT: 'test', LOG_LEVEL: 'silent' })
  const { log, error } = console
  const out: string[] = []
  const err: string[] = []
  console.log = (...parts: unknown[]) => {
    out.push(parts.join(' '))
  }
  console.error = (...parts: unknown[]) => {
    err.push(parts.join(' '))
  }
  try {
    return { code: await main(args), stdout: out.join('\n'), stderr: err.join('\n') }
  } finally {
    Object.assign(console, { log, error })
    process.env = env
  }
}

/** `npm run cli -- …` as the operator runs it (node --import tsx src/cli.ts), as a process of its own. */
async function cliProcess (url: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      env: { PATH: process.env.PATH, DATABASE_URL: url, ENVIRONMENT: 'test', LOG_LEVEL: 'silent' }
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

t.test('operator commands', async t => {
  const dir = `/tmp/roja-cli-${randomBytes(6).toString('hex')}`
  const url = `sqlite:${dir}/roja.sqlite`
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const db = createDb(url)
  t.teardown(() => db.destroy())
  await migrateToLatest(db)
  const now = writeTimeIso()
  await db
    .insertInto('user')
    .values({
      id: '7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10',
      username: 'ada',
      email: 'ada@example.com',
      password_hash: 'x',
      is_active: true,
      is_creator: false,
      created_at: now,
      updated_at: now
    })
    .execute()
  const flags = async () => {
    const row = await db.selectFrom('user').select(['is_creator', 'is_active']).where('username', '=', 'ada').executeTakeFirstOrThrow()
    return { is_creator: Boolean(row.is_creator), is_active: Boolean(row.is_active) }
  }

  t.test('as a process: exit 0 and its line when done, 1 for an unknown user, 2 for bad usage', async t => {
    const [done, ghost, usage] = await Promise.all([
      cliProcess(url, 'user', 'revoke-tokens', 'ada'),
      cliProcess(url, 'user', 'ban', 'ghost'),
      cliProcess(url, 'user', 'ban')
    ])
    t.same([done.code, ghost.code, usage.code], [0, 1, 2])
    t.match(done.stdout, /ada: every access token issued so far is revoked/)
    t.match(ghost.stderr, /no user named ghost/)
    t.match(usage.stderr, /usage: npm run cli -- user ban <username>/)
  })

  t.test('creator grant makes a creator; a second grant changes nothing', async t => {
    const res = await cli(url, 'creator', 'grant', 'ada')
    t.equal(res.code, 0)
    t.match(res.stdout, /ada is now a creator/)
    t.same(await flags(), { is_creator: true, is_active: true })
    const again = await cli(url, 'creator', 'grant', ' ADA ')
    t.equal(again.code, 0, 'the username is normalised like at sign-up')
    t.match(again.stdout, /already a creator, nothing changed/)
  })

  t.test('creator revoke', async t => {
    const res = await cli(url, 'creator', 'revoke', 'ada')
    t.equal(res.code, 0)
    t.match(res.stdout, /ada is no longer a creator/)
    t.same(await flags(), { is_creator: false, is_active: true })
  })

  t.test('user ban and unban', async t => {
    const ban = await cli(url, 'user', 'ban', 'ada')
    t.equal(ban.code, 0)
    t.match(ban.stdout, /ada is now banned/)
    t.same(await flags(), { is_creator: false, is_active: false })
    const unban = await cli(url, 'user', 'unban', 'ada')
    t.equal(unban.code, 0)
    t.match(unban.stdout, /ada is no longer banned/)
    t.same(await flags(), { is_creator: false, is_active: true })
  })

  t.test('user revoke-tokens bumps the token generation; a ban does too, an unban does not', async t => {
    const generation = async () =>
      Number((await db.selectFrom('user').select('token_generation').where('username', '=', 'ada').executeTakeFirstOrThrow()).token_generation)
    const before = await generation()
    const res = await cli(url, 'user', 'revoke-tokens', ' Ada ')
    t.equal(res.code, 0)
    t.match(res.stdout, /ada: every access token issued so far is revoked/)
    t.equal(await generation(), before + 1)
    await cli(url, 'user', 'ban', 'ada')
    t.equal(await generation(), before + 2, 'a ban revokes')
    await cli(url, 'user', 'unban', 'ada')
    t.equal(await generation(), before + 2, 'an unban brings no old token back')
  })

  t.test('an unknown user exits 1 with a clear message', async t => {
    for (const args of [
      ['creator', 'grant', 'ghost'],
      ['user', 'ban', 'ghost'],
      ['user', 'revoke-tokens', 'ghost']
    ]) {
      const res = await cli(url, ...args)
      t.equal(res.code, 1, args.join(' '))
      t.match(res.stderr, /no user named ghost/)
    }
  })

  t.test('bad usage exits 2 and prints the usage', async t => {
    const none = await cli(url)
    t.equal(none.code, 2)
    t.match(none.stderr, /creator grant <username>/)
    t.match(none.stderr, /user unban <username>/)
    t.match(none.stderr, /user revoke-tokens <username>/)
    t.match(none.stderr, /user delete <username>/)
    t.notMatch(none.stderr, /unknown command/, 'no command: the usage alone')
    const unknown = await cli(url, 'user', 'erase', 'ada')
    t.equal(unknown.code, 2)
    const typo = await cli(url, 'creator', 'grnt', 'ada')
    t.equal(typo.code, 2)
    t.match(typo.stderr, /^unknown command: creator grnt\n/, 'a mistyped command is named first')
    t.match(typo.stderr, /creator grant <username>/, 'then the usage')
    const missing = await cli(url, 'creator', 'grant')
    t.equal(missing.code, 2)
    t.match(missing.stderr, /usage: npm run cli -- creator grant <username>/)
    const extra = await cli(url, 'user', 'ban', 'ada', 'bob')
    t.equal(extra.code, 2)
    t.same(await flags(), { is_creator: false, is_active: true }, 'nothing changed')
  })
})

t.test('--help exits 0, for the CLI and for every command', async t => {
  // In-process (a process start each is slow on a busy machine): main's result is the exit code.
  const printed = t.capture(console, 'log')
  const refused = t.capture(console, 'error')
  t.equal(await main(['--help']), 0)
  const all = printed()
    .map(c => c.args.join(' '))
    .join('\n')
  t.match(all, /creator grant <username>\s+lets the user publish/)
  t.match(all, /same\s+settings as the server/, "says the CLI must use the server's database")
  for (const command of ['creator grant', 'creator revoke', 'user ban', 'user unban']) {
    t.equal(await main([...command.split(' '), '--help']), 0, command)
    t.match(
      printed()
        .map(c => c.args.join(' '))
        .join('\n'),
      new RegExp(`usage: npm run cli -- ${command} <username>`)
    )
  }
  t.equal(await main(['user', '-h']), 0)
  const group = printed()
    .map(c => c.args.join(' '))
    .join('\n')
  t.match(group, /user ban/)
  t.notMatch(group, /creator grant/, 'a group shows its own commands')
  t.equal(await main(['shop', '--help']), 2, 'help for an unknown command is bad usage')
  t.match(
    refused()
      .map(c => c.args.join(' '))
      .join('\n'),
    /usage: npm run cli -- <command>/
  )
})
