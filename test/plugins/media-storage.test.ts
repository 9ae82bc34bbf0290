import { createHash, randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { text } from 'node:stream/consumers'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import mediaStorage, { diskStorage } from '../../plugins/media-storage.js'

async function folder (t: Test) {
  const dir = await mkdtemp(join(tmpdir(), 'roja-storage-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

t.test('put stores a stream and reports its size and sha256; open reads it whole or by range', async (t) => {
  const dir = await folder(t)
  const storage = diskStorage(dir)
  const data = randomBytes(3 * 1024 * 1024 + 7)
  const stored = await storage.put('abc-1', Readable.from([data.subarray(0, 1000), data.subarray(1000)]))
  t.same(stored, { size: data.length, sha256: createHash('sha256').update(data).digest('hex') })
  t.same(await readdir(dir), ['abc-1'], 'only the final name, no temporary file')
  const whole = Buffer.concat(await (await storage.open('abc-1'))!.toArray())
  t.ok(whole.equals(data))
  const part = Buffer.concat(await (await storage.open('abc-1', { start: 10, end: 19 }))!.toArray())
  t.ok(part.equals(data.subarray(10, 20)))
  t.equal(await storage.open('missing'), null)
  await storage.remove('abc-1')
  await storage.remove('abc-1') // already gone: no error
  t.same(await readdir(dir), [])
})

t.test('a stream that fails midway leaves nothing behind', async (t) => {
  const dir = await folder(t)
  const storage = diskStorage(dir)
  async function * failing () {
    yield Buffer.alloc(64 * 1024)
    throw new Error('client went away')
  }
  await t.rejects(storage.put('abc-2', failing()), /client went away/)
  t.same(await readdir(dir), [])
})

t.test('an abort signal stops the write and leaves nothing behind', async (t) => {
  const dir = await folder(t)
  const storage = diskStorage(dir)
  const controller = new AbortController()
  async function * slow () {
    yield Buffer.alloc(1024)
    controller.abort()
    yield Buffer.alloc(1024)
  }
  await t.rejects(storage.put('abc-3', slow(), { signal: controller.signal }))
  t.same(await readdir(dir), [])
})

t.test('keys are server-made: anything path-like is refused', async (t) => {
  const storage = diskStorage(await folder(t))
  for (const key of ['../etc/passwd', 'a/b', '', '.hidden', 'A', 'x'.repeat(200)]) {
    await t.rejects(storage.put(key, Readable.from([Buffer.from('x')])), /invalid storage key/, JSON.stringify(key))
    await t.rejects(storage.open(key), /invalid storage key/)
  }
})

t.test('the plugin decorates mediaStorage under DATA_DIR/media and sweeps stale temporaries', async (t) => {
  const dataDir = await folder(t)
  const media = join(dataDir, 'media')
  await mkdir(media)
  await writeFile(join(media, 'old.0a1b.tmp'), 'left by a crash')
  await writeFile(join(media, 'new.0a1b.tmp'), 'an upload in progress')
  const old = new Date(Date.now() - 2 * 24 * 3600 * 1000)
  await utimes(join(media, 'old.0a1b.tmp'), old, old)

  const app = Fastify()
  app.register(fp(async (f) => { f.decorate('config', { dataDir } as never) }, { name: 'config' }))
  app.register(mediaStorage)
  await app.ready()
  t.teardown(() => app.close())
  t.same((await readdir(media)).sort(), ['new.0a1b.tmp'], 'only the stale temporary is removed')
  await app.mediaStorage.put('k1', Readable.from([Buffer.from('hello')]))
  t.equal(await text((await app.mediaStorage.open('k1'))!), 'hello')
})
