import { randomBytes, randomUUID } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { createUser, verifyEmail, type TestUser } from '../../fixtures.js'
import { build, json } from '../../helper.js'
import { createMedia, reserveUpload, storeUpload } from '../../../src/domain/media.js'

/**
 * Who may upload and how much: a verified address first (403 EmailNotVerified, before any byte of
 * the body is read), then a per-user storage quota (MEDIA_QUOTA_BYTES, 413 StorageQuotaExceeded)
 * that uploads in progress count against too, so that concurrent uploads cannot both fit into the
 * same room. Whatever is refused leaves no file, no row and no reservation. GET /v1/users/me/media
 * shows the quota and what takes it.
 */

const BOUNDARY = '----roja-quota-boundary-4b1d'
const MiB = 1024 * 1024
const HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`)
const TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`)
const TYPE = `multipart/form-data; boundary=${BOUNDARY}`

const form = (data: Buffer) => Buffer.concat([HEAD, data, TAIL])
const upload = (app: FastifyInstance, user: TestUser, data: Buffer) =>
  app.inject({ method: 'POST', url: '/v1/media', headers: { ...user.headers, 'content-type': TYPE }, payload: form(data) })
const usage = async (app: FastifyInstance, user: TestUser, query = '') =>
  json(await app.inject({ method: 'GET', url: `/v1/users/me/media${query}`, headers: user.headers }))

/** DATA_DIR/media (temporary files too), the media rows and the reservations: what a refused upload must not add to. */
async function snapshot (app: FastifyInstance) {
  return {
    files: (await readdir(join(app.config.dataDir, 'media'))).sort(),
    rows: (await app.db.selectFrom('media').select('id').execute()).length,
    reservations: (await app.db.selectFrom('media_upload').select('id').execute()).length
  }
}

function refusedForQuota (t: Test, res: { statusCode: number, body: string, headers: Record<string, unknown> }, name: string) {
  t.equal(res.statusCode, 413, name)
  t.match(res.headers['content-type'], /^application\/problem\+json/, name)
  t.equal(JSON.parse(res.body).code, 'StorageQuotaExceeded', name)
}

t.test('an unverified address is 403 EmailNotVerified and nothing is kept; once verified, the upload works', async (t) => {
  const app = await build(t)
  const user = await createUser(app)
  const before = await snapshot(app)
  const res = await upload(app, user, randomBytes(1000))
  t.equal(res.statusCode, 403)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.equal(json(res).code, 'EmailNotVerified')
  t.same(await snapshot(app), before, 'no file, no row, no reservation')

  await verifyEmail(app, user)
  const ok = await upload(app, user, randomBytes(1000))
  t.equal(ok.statusCode, 201)
  t.equal(json(ok).size, 1000)
})

t.test('an unverified address is refused before the body is read: a large upload is not waited for', async (t) => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const user = await createUser(app)
  const before = await snapshot(app)
  const size = 64 * MiB
  let sent = 0
  const res = await new Promise<{ status: number, body: string, connection?: string }>((resolve, reject) => {
    const req = http.request({
      port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/v1/media',
      headers: { ...user.headers, 'content-type': TYPE, 'content-length': String(HEAD.length + size + TAIL.length) }
    }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (c: string) => { body += c }).on('end', () => {
        resolve({ status: res.statusCode!, body, connection: res.headers.connection })
        req.destroy()
      })
    })
    req.on('error', reject)
    // Only the start of the body goes out; the answer must come without the rest.
    req.write(HEAD)
    req.write(randomBytes(64 * 1024))
    sent = HEAD.length + 64 * 1024
  })
  t.equal(res.status, 403)
  t.equal(JSON.parse(res.body).code, 'EmailNotVerified')
  t.equal(res.connection, 'close', 'the connection closes, so the client stops sending')
  t.ok(sent < size, 'answered with most of the body never sent')
  t.same(await snapshot(app), before)
})

t.test('the quota: exactly at it is accepted, one byte over is 413 StorageQuotaExceeded and nothing is kept', async (t) => {
  const app = await build(t, { env: { MEDIA_QUOTA_BYTES: '4096' } })
  const user = await createUser(app, { verified: true })
  t.equal((await upload(app, user, randomBytes(3000))).statusCode, 201)

  let before = await snapshot(app)
  refusedForQuota(t, await upload(app, user, randomBytes(1097)), '3000 + 1097: one byte over')
  t.same(await snapshot(app), before, 'no file, no row, no reservation')

  const atQuota = await upload(app, user, randomBytes(1096))
  t.equal(atQuota.statusCode, 201, '3000 + 1096: exactly the quota')
  before = await snapshot(app)
  const full = await upload(app, user, randomBytes(1))
  refusedForQuota(t, full, 'one byte more at a full quota')
  t.match(json(full).detail, /your storage quota of 4096 bytes is used up/)
  refusedForQuota(t, await upload(app, user, Buffer.alloc(0)), 'an empty file at a full quota')
  t.same(await snapshot(app), before)

  // One file alone, on both sides of the boundary.
  const other = await createUser(app, { verified: true })
  before = await snapshot(app)
  refusedForQuota(t, await upload(app, other, randomBytes(4097)), 'one file one byte over')
  t.same(await snapshot(app), before)
  t.equal((await upload(app, other, randomBytes(4096))).statusCode, 201, 'one file of exactly the quota')

  t.match(await usage(app, user), { total: 2, used_bytes: 4096, quota_bytes: 4096, available_bytes: 0 })
  t.match(await usage(app, other), { total: 1, used_bytes: 4096, available_bytes: 0 })
})

t.test('without a Content-Length the quota is enforced while the file streams: it stops soon after the quota', async (t) => {
  const app = await build(t, { env: { MEDIA_QUOTA_BYTES: String(MiB) } })
  const user = await createUser(app, { verified: true })
  const before = await snapshot(app)
  const size = 64 * MiB
  let pulled = 0
  // A streamed body carries no Content-Length: nothing says its size before the bytes come.
  const body = Readable.from((function * () {
    yield HEAD
    for (let sent = 0; sent < size; sent += 64 * 1024) {
      pulled += 64 * 1024
      yield randomBytes(64 * 1024)
    }
    yield TAIL
  })())
  const res = await app.inject({ method: 'POST', url: '/v1/media', headers: { ...user.headers, 'content-type': TYPE }, payload: body })
  refusedForQuota(t, res, 'a streamed file over the quota')
  t.ok(pulled < 16 * MiB, `the server stopped reading soon after the quota (${(pulled / MiB).toFixed(1)} of 64 MiB pulled)`)
  t.same(await snapshot(app), before, 'no partial or temporary file, no row, no reservation')

  const fits = Readable.from([HEAD, randomBytes(MiB), TAIL])
  const ok = await app.inject({ method: 'POST', url: '/v1/media', headers: { ...user.headers, 'content-type': TYPE }, payload: fits })
  t.equal(ok.statusCode, 201, 'a streamed file of exactly the quota')
})

t.test('two uploads at once that together exceed the quota: one is refused, the other kept', async (t) => {
  const app = await build(t, { env: { MEDIA_QUOTA_BYTES: '10000' } })
  for (let round = 0; round < 6; round++) {
    const user = await createUser(app, { verified: true })
    const before = await snapshot(app)
    // With a Content-Length (the first three rounds) and streamed without one (the others).
    const send = (data: Buffer) => round < 3
      ? upload(app, user, data)
      : app.inject({ method: 'POST', url: '/v1/media', headers: { ...user.headers, 'content-type': TYPE }, payload: Readable.from([HEAD, data, TAIL]) })
    const answers = await Promise.all([send(randomBytes(6000)), send(randomBytes(6000))])
    t.same(answers.map(r => r.statusCode).sort(), [201, 413], `round ${round}: one kept, one refused`)
    refusedForQuota(t, answers.find(r => r.statusCode !== 201) ?? answers[1], `round ${round}`)
    const after = await snapshot(app)
    t.equal(after.rows, before.rows + 1, `round ${round}: one row`)
    t.equal(after.files.length, before.files.length + 1, `round ${round}: one file`)
    t.equal(after.reservations, 0, `round ${round}: no reservation left`)
    t.match(await usage(app, user), { total: 1, used_bytes: 6000, available_bytes: 4000 })
  }
})

t.test('a reservation that outlived its time no longer counts, and its upload is counted again before its row', async (t) => {
  const app = await build(t)
  const user = await createUser(app, { verified: true })
  const quota = 1000
  const late = await reserveUpload(app.db, user.id, { quota, maxFiles: 100, wanted: 800, ttlMs: -1 }) // already past its time
  t.equal(late.bytes, 800)
  const next = await reserveUpload(app.db, user.id, { quota, maxFiles: 100, wanted: 800, ttlMs: 60_000 })
  t.equal(next.bytes, 800, 'the lapsed room is free again')
  // The late upload still finishes within its own room, but the count under the owner's lock refuses its row.
  const stored = await storeUpload(app.mediaStorage, Readable.from([randomBytes(700)]), late)
  await t.rejects(createMedia(app.db, app.mediaStorage, late, stored), { code: 'StorageQuotaExceeded' })
  t.notOk((await readdir(join(app.config.dataDir, 'media'))).includes(stored.id), 'its file is removed')
  t.equal((await app.db.selectFrom('media').select('id').execute()).length, 0, 'and it has no row')
})

t.test('GET /v1/users/me/media: the caller\'s own uploads, paged and sorted, with the quota and what takes it', async (t) => {
  const app = await build(t, { env: { MEDIA_QUOTA_BYTES: '10000' } })
  const user = await createUser(app, { verified: true })
  const other = await createUser(app, { verified: true })
  t.same(await usage(app, user), { media: [], total: 0, used_bytes: 0, quota_bytes: 10000, available_bytes: 10000 })

  const ids: Record<number, string> = {}
  for (const size of [100, 300, 200]) ids[size] = json(await upload(app, user, randomBytes(size))).id
  await upload(app, other, randomBytes(50))

  const all = await usage(app, user)
  t.match(all, { total: 3, used_bytes: 600, quota_bytes: 10000, available_bytes: 9400 })
  t.same(all.media.map((m: { id: string }) => m.id), [ids[200], ids[300], ids[100]], 'newest first')
  t.same(Object.keys(all.media[0]).sort(), ['content_type', 'created_at', 'id', 'sha256', 'size', 'url'], 'each a Media')
  t.same((await usage(app, user, '?sort=size')).media.map((m: { size: number }) => m.size), [100, 200, 300])
  t.same((await usage(app, user, '?sort=-size')).media.map((m: { size: number }) => m.size), [300, 200, 100])

  const first = await app.inject({ method: 'GET', url: '/v1/users/me/media?limit=2', headers: user.headers })
  t.equal(json(first).media.length, 2)
  t.equal(json(first).total, 3, 'total counts every file')
  t.equal(json(first).used_bytes, 600, 'used_bytes counts every page')
  t.match(first.headers.link, /<\/v1\/users\/me\/media\?limit=2&offset=2>; rel="next"/)
  t.same((await usage(app, user, '?limit=2&offset=2')).media.map((m: { id: string }) => m.id), [ids[100]])
  t.match(await usage(app, other), { total: 1, used_bytes: 50 }, 'another user sees only their own')

  // An upload in progress holds its room until it ends; one left past its time does not.
  const now = Date.now()
  await app.db.insertInto('media_upload').values([
    { id: randomUUID(), owner_id: user.id, reserved_bytes: 2000, expires_at: new Date(now + 600_000).toISOString() },
    { id: randomUUID(), owner_id: user.id, reserved_bytes: 5000, expires_at: new Date(now - 1000).toISOString() }
  ]).execute()
  t.match(await usage(app, user), { total: 3, used_bytes: 600, available_bytes: 7400 })

  const unverified = await createUser(app)
  t.match(await usage(app, unverified), { total: 0, used_bytes: 0, available_bytes: 10000 }, 'readable before the address is verified')
  const none = await app.inject({ method: 'GET', url: '/v1/users/me/media' })
  t.equal(none.statusCode, 401)
  t.equal(json(none).code, 'NotAuthenticated')
  for (const query of ['?owner_id=x', '?sort=name', '?limit=0', '?limit=101', '?offset=-1']) {
    const res = await app.inject({ method: 'GET', url: `/v1/users/me/media${query}`, headers: user.headers })
    t.equal(res.statusCode, 422, query)
    t.equal(json(res).code, 'ValidationFailed', query)
  }
})

t.test('files count as well as bytes: MEDIA_QUOTA_FILES stored files, empty ones included, then 413 before any byte', async (t) => {
  const app = await build(t, { env: { MEDIA_QUOTA_FILES: '3' } })
  const user = await createUser(app, { verified: true })
  const statuses = []
  for (const data of [Buffer.alloc(0), Buffer.alloc(0), randomBytes(10)]) statuses.push((await upload(app, user, data)).statusCode)
  t.same(statuses, [201, 201, 201], 'three files, two of them empty, fit a count of three')
  const before = await snapshot(app)
  const fourth = await upload(app, user, Buffer.alloc(0))
  refusedForQuota(t, fourth, 'a fourth, empty, file')
  t.match(json(fourth).detail, /at most 3 files/)
  t.same(await snapshot(app), before, 'no file, no row, no reservation')
  const other = await createUser(app, { verified: true })
  t.equal((await upload(app, other, Buffer.alloc(0))).statusCode, 201, 'the count is per user')
})
