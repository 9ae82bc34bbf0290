import { spawn } from 'node:child_process'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import t, { type Test } from 'tap'
import { backup, BackupError, MANIFEST, restore, verify } from '../src/backup.js'
import { ROOT } from '../src/package-info.js'
import { createUser, type TestUser } from './fixtures.js'
import { build, dialect, freshDatabase, json, PG_URL, testConfig } from './helper.js'

/**
 * The restore drill (docs/operations.md, Backups): under a write load, take a backup, keep writing,
 * restore it elsewhere, start Roja on it, and check that every write acknowledged before the
 * backup began is there, that nothing acknowledged later is half there, and that every medium a
 * row names has its bytes. SQLite: `npm run cli -- backup` and `restore`; PostgreSQL: pg_dump,
 * pg_restore and the media folder, as docs/operations.md says.
 */

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64')
const BOUNDARY = '----roja-backup-boundary'
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')
const tempDir = (t: Test, prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A command run to its end: its exit code and what it printed. */
function run (command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null, out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (c) => { out += c })
    child.stderr.on('data', (c) => { out += c })
    child.once('error', reject)
    child.once('close', code => resolve({ code, out }))
  })
}
const cli = (args: string[], env: Record<string, string>) =>
  run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { ENVIRONMENT: 'test', LOG_LEVEL: 'silent', ...env })

interface Written { kind: 'post' | 'media', id: string, ackAt: number, title?: string, tags?: string[], bytes?: Buffer }

/** Writers creating posts and uploading media back to back until stopped; each acknowledged write kept with its time. */
function writeLoad (app: FastifyInstance, user: TestUser) {
  const written: Written[] = []
  const refused: string[] = []
  let running = true
  let n = 0
  const post = async () => {
    const title = `drill ${n++} ${randomUUID()}`
    const tags = [`t${n % 5}`, 'drill']
    const payload = { title, type: 'ARTICLE', body: 'a few words here', tags }
    const res = await app.inject({ method: 'POST', url: '/v1/posts', headers: user.headers, payload })
    if (res.statusCode === 201) written.push({ kind: 'post', id: json(res).id, ackAt: Date.now(), title, tags })
    else refused.push(`post ${res.statusCode} ${res.body}`)
  }
  const medium = async () => {
    const bytes = Buffer.concat([PNG, randomBytes(2048)])
    const head = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`
    const payload = Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)])
    const headers = { ...user.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
    const res = await app.inject({ method: 'POST', url: '/v1/media', headers, payload })
    if (res.statusCode === 201) written.push({ kind: 'media', id: json(res).id, ackAt: Date.now(), bytes })
    else refused.push(`media ${res.statusCode} ${res.body}`)
  }
  const loops = [post, post, medium].map(async (write) => {
    while (running) {
      await write()
      await sleep(5)
    }
  })
  return { written, refused, stop: async () => { running = false; await Promise.all(loops) } }
}

t.test(`restore drill on ${dialect}: writes acknowledged before the backup come back whole, later ones whole or not at all`, async (t) => {
  const dataDir = tempDir(t, 'roja-drill-live-')
  const copyDir = join(tempDir(t, 'roja-drill-backup-'), 'backup')
  const restoredDir = tempDir(t, 'roja-drill-restored-')
  const database = dialect === 'sqlite' ? { url: `sqlite:${join(dataDir, 'roja.sqlite')}` } : await freshDatabase(t)
  const app = await build(t, { database, env: { DATA_DIR: dataDir } })
  const creator = await createUser(app, { creator: true, verified: true })
  const load = writeLoad(app, creator)
  while (load.written.filter(w => w.kind === 'media').length < 5 || load.written.length < 30) {
    if (load.refused.length > 0) throw new Error(`a write was refused: ${load.refused[0]}`)
    await sleep(20)
  }

  const began = Date.now()
  let restoredDb: { url: string, schema?: string }
  if (dialect === 'sqlite') {
    const taken = await cli(['backup', copyDir], { DATA_DIR: dataDir, DATABASE_URL: database.url })
    t.equal(taken.code, 0, taken.out.trim())
  } else {
    // docs/operations.md, Backups (PostgreSQL): media before and after the dump, without overwriting
    mkdirSync(join(copyDir, 'media'), { recursive: true })
    t.equal((await run('cp', ['-R', '-n', `${dataDir}/media/.`, join(copyDir, 'media')])).code, 0, 'media, first pass')
    const dump = await run('pg_dump', ['--format=custom', `--schema=${database.schema!}`, `--file=${join(copyDir, 'roja.dump')}`, PG_URL])
    t.equal(dump.code, 0, `pg_dump ${dump.out}`)
    t.equal((await run('cp', ['-R', '-n', `${dataDir}/media/.`, join(copyDir, 'media')])).code, 0, 'media, second pass')
  }
  const ended = Date.now()
  const countAtEnd = load.written.length
  while (load.written.length < countAtEnd + 10 && load.refused.length === 0) await sleep(20)
  await load.stop()
  t.same(load.refused, [], 'no write was refused')
  const before = load.written.filter(w => w.ackAt < began)
  const after = load.written.filter(w => w.ackAt >= began)
  t.comment(`${before.length} writes acknowledged before the backup, ${after.length} after; the backup took ${ended - began} ms`)
  t.ok(after.length >= 10, 'writes went on during and after the backup')

  if (dialect === 'sqlite') {
    restoredDb = { url: `sqlite:${join(restoredDir, 'roja.sqlite')}` }
    const restored = await cli(['restore', copyDir], { DATA_DIR: restoredDir, DATABASE_URL: restoredDb.url })
    t.equal(restored.code, 0, restored.out.trim())
  } else {
    const name = `roja_drill_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    await admin.query(`create database ${name}`)
    t.teardown(async () => {
      const c = new pg.Client({ connectionString: PG_URL })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    })
    await admin.end()
    const url = PG_URL.replace(/\/[^/]*$/, `/${name}`)
    const restored = await run('pg_restore', ['--exit-on-error', `--dbname=${url}`, join(copyDir, 'roja.dump')])
    t.equal(restored.code, 0, `pg_restore ${restored.out}`)
    t.equal((await run('cp', ['-R', join(copyDir, 'media'), join(restoredDir, 'media')])).code, 0, 'media copied in')
    restoredDb = { url, schema: database.schema }
  }

  const back = await build(t, { database: restoredDb, env: { DATA_DIR: restoredDir } })
  const missing: string[] = []
  for (const w of before) {
    const res = await back.inject({ method: 'GET', url: w.kind === 'post' ? `/v1/posts/${w.id}` : `/v1/media/${w.id}` })
    const whole = res.statusCode === 200 && (w.kind === 'post'
      ? json(res).title === w.title && JSON.stringify(json(res).tags.sort()) === JSON.stringify([...w.tags!].sort())
      : res.rawPayload.equals(w.bytes!))
    if (!whole) missing.push(`${w.kind} ${w.id}: ${res.statusCode}`)
  }
  t.same(missing, [], `each of the ${before.length} writes acknowledged before the backup is there, whole`)

  let present = 0
  const half: string[] = []
  for (const w of after) {
    const res = await back.inject({ method: 'GET', url: w.kind === 'post' ? `/v1/posts/${w.id}` : `/v1/media/${w.id}` })
    if (res.statusCode === 404) continue
    present++
    const whole = res.statusCode === 200 && (w.kind === 'post'
      ? json(res).title === w.title && json(res).tags.length === w.tags!.length
      : res.rawPayload.equals(w.bytes!))
    if (!whole) half.push(`${w.kind} ${w.id}: ${res.statusCode}`)
  }
  t.same(half, [], `of the ${after.length} later writes, ${present} are there and whole, the rest absent`)

  const db = back.db
  const media = await db.selectFrom('media').select(['storage_key', 'sha256']).execute()
  const noBytes = media.filter(m => {
    const file = join(restoredDir, 'media', m.storage_key)
    return !existsSync(file) || sha256(readFileSync(file)) !== m.sha256
  })
  t.same(noBytes, [], `each of the ${media.length} media rows has its bytes`)
  const tags = await db.selectFrom('post').leftJoin('post_tag', 'post_tag.post_id', 'post.id')
    .select(['post.id', 'post.tags']).select(eb => eb.fn.count<number>('post_tag.tag').as('rows'))
    .groupBy(['post.id', 'post.tags']).execute()
  t.same(tags.filter(p => (JSON.parse(p.tags) as string[]).length !== Number(p.rows)), [], 'each post has its tag rows')
  const list = await back.inject({ method: 'GET', url: '/v1/posts?limit=1' })
  const [{ n }] = await db.selectFrom('post').select(eb => eb.fn.countAll<number>().as('n')).where('published_at', 'is not', null).execute()
  t.equal(json(list).total, Number(n), 'the list total (the counters) agrees with the posts')
})

if (dialect === 'sqlite') {
  t.test('backup refuses a path it cannot write before any work, and restore a directory it did not finish', async (t) => {
    const dataDir = tempDir(t, 'roja-backup-live-')
    const config = testConfig({ DATA_DIR: dataDir }, `sqlite:${join(dataDir, 'roja.sqlite')}`)
    const app = await build(t, { database: { url: config.databaseUrl }, env: { DATA_DIR: dataDir } })
    await createUser(app)
    const parent = tempDir(t, 'roja-backup-target-')

    await t.rejects(backup(config, join('/dev/null', 'backup')), { message: /cannot write the backup to \/dev\/null\/backup/ })
    writeFileSync(join(parent, 'taken'), 'x')
    const exists = new BackupError(`cannot write the backup to ${join(parent, 'taken')}: it exists already (give a new path)`)
    await t.rejects(backup(config, join(parent, 'taken')), exists)
    await t.rejects(backup(config, join(parent, 'no', 'such', 'folder')), /cannot write the backup to/)
    t.same(readdirSync(parent), ['taken'], 'nothing was written')

    const good = join(parent, 'good')
    const manifest = await backup(config, good)
    t.equal(manifest.files[0].path, 'roja.sqlite')
    t.same(verify(good), manifest, 'a finished backup verifies')

    // What a kill leaves: everything but the manifest, written last by a rename.
    const cut = join(parent, 'cut')
    await backup(config, cut)
    rmSync(join(cut, MANIFEST))
    const empty = tempDir(t, 'roja-restore-')
    const into = testConfig({ DATA_DIR: empty }, `sqlite:${join(empty, 'roja.sqlite')}`)
    await t.rejects(restore(into, cut), { message: /is not a complete backup: no manifest.json/ })
    const tampered = join(parent, 'tampered')
    await backup(config, tampered)
    writeFileSync(join(tampered, 'roja.sqlite'), 'not a database')
    await t.rejects(restore(into, tampered), { message: /roja.sqlite does not match its checksum/ })
    t.same(readdirSync(empty), [], 'and nothing was restored')

    const taken = await cli(['restore', good], { DATA_DIR: dataDir, DATABASE_URL: config.databaseUrl })
    t.equal(taken.code, 1)
    t.match(taken.out, /DATA_DIR .* is not empty .*give --force/, 'a DATA_DIR in use is refused')
    const target = tempDir(t, 'roja-restore-forced-')
    writeFileSync(join(target, 'old.txt'), 'x')
    const forced = await cli(['restore', good, '--force'], { DATA_DIR: target, DATABASE_URL: `sqlite:${join(target, 'roja.sqlite')}` })
    t.equal(forced.code, 0, forced.out.trim())
    t.ok(existsSync(join(target, 'roja.sqlite')), 'with --force it is restored')
  })
} else {
  t.test('backup on PostgreSQL points to pg_dump', async (t) => {
    const out = await cli(['backup', join(tmpdir(), `roja-${randomUUID()}`)], { DATABASE_URL: PG_URL })
    t.equal(out.code, 1)
    t.match(out.out, /on PostgreSQL use pg_dump and pg_restore/)
  })
}
