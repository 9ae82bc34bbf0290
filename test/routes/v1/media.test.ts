import { createHash, randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createUser, type TestUser } from '../../fixtures.js'
import { build, json } from '../../helper.js'
import { createAjv } from '../../../src/options.js'

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64')
const BOUNDARY = '----roja-test-boundary-7f1d3c1e'
const MiB = 1024 * 1024

interface Part {
  name: string
  filename?: string
  type?: string
  data: Buffer | string
}

function form (parts: Part[]): Buffer {
  const chunks: Buffer[] = []
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`
    chunks.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`))
    chunks.push(Buffer.from(p.data), Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`))
  return Buffer.concat(chunks)
}

function upload (app: FastifyInstance, user: TestUser | undefined, parts: Part[] | Buffer, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...user?.headers, ...headers },
    payload: Buffer.isBuffer(parts) ? parts : form(parts)
  })
}

const file = (data: Buffer | string, type = 'application/octet-stream', filename = 'upload.bin'): Part => ({ name: 'file', filename, type, data })
/** Uploads need a verified address: the uploaders of these tests have one. */
const createUploader = (app: FastifyInstance) => createUser(app, { verified: true })
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex')

/** Every file under DATA_DIR/media, temporary ones included. */
async function storedFiles (app: FastifyInstance): Promise<string[]> {
  return readdir(join(app.config.dataDir, 'media'))
}

async function rows (app: FastifyInstance) {
  return app.db.selectFrom('media').selectAll().execute()
}

// One app for the whole file (building one is slow on a busy machine); each test makes its own users.
const app = await build(t)
let port: number | undefined

/** The shared app on a real loopback port, for streamed bodies and disconnects. */
async function listen (): Promise<number> {
  if (port === undefined) {
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as AddressInfo).port
  }
  return port
}

/** What DATA_DIR/media, the media table and the quota's reservations hold now, to show that a failed upload added nothing. */
async function snapshot (app: FastifyInstance) {
  const reserved = await app.db.selectFrom('media_upload').select('id').execute()
  return { files: (await storedFiles(app)).sort(), rows: (await rows(app)).length, reservations: reserved.length }
}

t.test('POST /v1/media stores a PNG and answers 201, Location and the Media', async t => {
  const user = await createUploader(app)
  // The client's claim (text/plain) is ignored: the bytes say PNG.
  const res = await upload(app, user, [file(PNG, 'text/plain', 'picture.txt')])
  t.equal(res.statusCode, 201)
  const media = json(res)
  t.match(media, { content_type: 'image/png', size: PNG.length, sha256: sha256(PNG) })
  t.match(media.id, /^[0-9a-f-]{36}$/)
  t.match(media.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/)
  t.equal(res.headers.location, `/v1/media/${media.id}`)
  t.equal(media.url, `http://127.0.0.1:3000/v1/media/${media.id}`, 'on MEDIA_PUBLIC_URL, no file extension')
  t.same(Object.keys(media).sort(), ['content_type', 'created_at', 'id', 'sha256', 'size', 'url'])
  const mediaUrl = createAjv(app.config).compile({ type: 'string', format: 'media-url' })
  t.ok(mediaUrl(media.url), 'the url passes the media-url host rule of the default config')
  t.ok((await storedFiles(app)).includes(media.id), 'stored under its server-made key')
  const row = (await rows(app)).find(r => r.id === media.id)
  t.equal(row?.owner_id, user.id)
})

t.test('the media type is sniffed from the bytes: text, unknown binary, empty file', async t => {
  const user = await createUploader(app)
  const cases: Array<[string, Buffer | string, string]> = [
    ['UTF-8 text', 'héllo wörld\nsecond line\n', 'text/plain'],
    ['text claimed as PNG', 'just words', 'text/plain'],
    ['unknown binary', Buffer.from([0x00, 0x01, 0x02, 0xff, 0xfe, 0x00, 0x10]), 'application/octet-stream'],
    ['HTML is served as text, never as a page', '<!doctype html><script>alert(1)</script>', 'text/plain'],
    ['empty file', '', 'application/octet-stream']
  ]
  for (const [name, data, expected] of cases) {
    const res = await upload(app, user, [file(data, 'image/png')])
    t.equal(res.statusCode, 201, name)
    t.equal(json(res).content_type, expected, name)
    t.equal(json(res).size, Buffer.byteLength(data), name)
  }
})

t.test('XML, SVG, XHTML and HTML are stored and served as text/plain with nosniff, never as markup', async t => {
  const user = await createUploader(app)
  const svg = '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>\n'
  const cases: Array<[string, Buffer | string]> = [
    ['SVG with an XML declaration', svg],
    ['XHTML', '<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><body onload="alert(1)"/></html>'],
    ['plain XML', '<?xml version="1.0"?><note>hi</note>'],
    ['XML in UTF-16', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<?xml version="1.0"?><svg/>', 'utf16le')])],
    ['SVG without a declaration', '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'],
    ['HTML', '<html><script>alert(1)</script></html>']
  ]
  for (const [name, data] of cases) {
    const res = await upload(app, user, [file(data, 'image/svg+xml', 'x.svg')])
    t.equal(res.statusCode, 201, name)
    const media = json(res)
    t.equal(media.content_type, 'text/plain', name)
    const bytes = await app.inject({ method: 'GET', url: `/v1/media/${media.id}` })
    t.equal(bytes.statusCode, 200, name)
    t.match(bytes.headers['content-type'], /^text\/plain(;|$)/, name)
    t.equal(bytes.headers['x-content-type-options'], 'nosniff', name)
    t.match(bytes.headers['content-security-policy'], /sandbox/, name)
    t.same(bytes.rawPayload, Buffer.from(data), `${name}: the same bytes`)
    const asXml = await app.inject({ method: 'GET', url: `/v1/media/${media.id}`, headers: { accept: 'application/xml, image/svg+xml' } })
    t.equal(asXml.statusCode, 406, `${name}: never negotiated as markup`)
  }
  // The other side of the rule: binary types that file-type knows keep their own type.
  t.equal(json(await upload(app, user, [file(PNG)])).content_type, 'image/png')
})

t.test('stored media sniffed as XML before the rule are served as text/plain after the migration', async t => {
  const { up } = await import('../../../src/db/migrations/2026_11_23_0300_media_active_content_as_text.js')
  const user = await createUploader(app)
  const xml = json(await upload(app, user, [file('<?xml version="1.0"?><svg/>')]))
  const png = json(await upload(app, user, [file(PNG)]))
  await app.db.updateTable('media').set({ content_type: 'application/xml' }).where('id', '=', xml.id).execute()
  await up(app.db)
  const types = Object.fromEntries((await rows(app)).map(r => [r.id, r.content_type]))
  t.equal(types[xml.id], 'text/plain')
  t.equal(types[png.id], 'image/png')
})

t.test('GET /v1/media/{mediaId} picks the representation by Accept', async t => {
  const user = await createUploader(app)
  const media = json(await upload(app, user, [file(PNG)]))
  const text = json(await upload(app, user, [file('plain words\n')]))
  const get = (id: string, accept?: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url: `/v1/media/${id}`, headers: { ...(accept !== undefined ? { accept } : {}), ...headers } })

  for (const accept of [undefined, '*/*', 'image/*', 'image/png', 'text/html;q=0.9, image/*;q=0.8', 'application/json;q=0.5, image/png']) {
    const res = await get(media.id, accept)
    t.equal(res.statusCode, 200, `Accept ${accept ?? '(none)'}`)
    t.equal(res.headers['content-type'], 'image/png', `Accept ${accept ?? '(none)'}`)
    t.same(res.rawPayload, PNG, `Accept ${accept ?? '(none)'}: the same bytes`)
  }
  const bytes = await get(media.id)
  t.equal(bytes.headers['content-length'], String(PNG.length))
  t.equal(bytes.headers['accept-ranges'], 'bytes')
  t.equal(bytes.headers.etag, `"sha256-${media.sha256}"`)
  t.match(bytes.headers.vary, /accept/i)
  t.equal(sha256(bytes.rawPayload), media.sha256, 'byte-exact round trip')

  const meta = await get(media.id, 'application/json')
  t.equal(meta.statusCode, 200)
  t.match(meta.headers['content-type'], /^application\/json/)
  t.same(json(meta), media, 'the metadata as the upload answered it')
  t.ok(meta.headers.etag)
  t.not(meta.headers.etag, bytes.headers.etag, 'each representation has its own ETag')
  t.equal((await get(media.id, 'application/json', { 'if-none-match': String(meta.headers.etag) })).statusCode, 304)

  const notModified = await get(media.id, undefined, { 'if-none-match': String(bytes.headers.etag) })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.body, '')

  for (const [id, accept] of [
    [media.id, 'text/html'],
    [media.id, 'image/jpeg'],
    [text.id, 'image/*'],
    [media.id, 'application/xml']
  ]) {
    const res = await get(id, accept)
    t.equal(res.statusCode, 406, `Accept ${accept}`)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.equal(json(res).code, 'NotAcceptable')
  }

  const plain = await get(text.id, 'text/*')
  t.equal(plain.statusCode, 200)
  t.match(plain.headers['content-type'], /^text\/plain/)
  t.equal(plain.body, 'plain words\n')
})

t.test('GET is public: no token needed', async t => {
  const user = await createUploader(app)
  const media = json(await upload(app, user, [file(PNG)]))
  const res = await app.inject({ method: 'GET', url: `/v1/media/${media.id}` })
  t.equal(res.statusCode, 200)
})

t.test('Range requests get 206 with Content-Range; an unsatisfiable range 416', async t => {
  const user = await createUploader(app)
  const data = Buffer.from('0123456789abcdefghij') // 20 bytes of text
  const media = json(await upload(app, user, [file(data)]))
  const get = (range: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url: `/v1/media/${media.id}`, headers: { range, ...headers } })

  const cases: Array<[string, number, number]> = [
    ['bytes=0-3', 0, 3],
    ['bytes=-4', 16, 19],
    ['bytes=15-', 15, 19],
    ['bytes=5-100', 5, 19],
    ['bytes=0-0', 0, 0]
  ]
  for (const [range, start, end] of cases) {
    const res = await get(range)
    t.equal(res.statusCode, 206, range)
    t.equal(res.headers['content-range'], `bytes ${start}-${end}/20`, range)
    t.equal(res.headers['content-length'], String(end - start + 1), range)
    t.equal(res.body, data.subarray(start, end + 1).toString(), range)
  }

  const several = await get('bytes=0-1,5-6')
  t.equal(several.statusCode, 200, 'several ranges get the whole file')
  t.equal(several.body, data.toString())
  const merged = await get('bytes=0-4,5-9')
  t.equal(merged.statusCode, 206, 'adjacent ranges are merged into one')
  t.equal(merged.headers['content-range'], 'bytes 0-9/20')

  const malformed = await get('bytes=abc')
  t.equal(malformed.statusCode, 200, 'a malformed Range is ignored')
  t.equal(malformed.body, data.toString())

  for (const range of ['bytes=20-', 'bytes=100-200']) {
    const res = await get(range)
    t.equal(res.statusCode, 416, range)
    t.equal(res.headers['content-range'], 'bytes */20')
    t.equal(json(res).code, 'RangeNotSatisfiable')
  }

  // RFC 9110 §14.1.2: a suffix longer than the file means the whole file; a zero-length suffix names nothing.
  for (const range of ['bytes=-19', 'bytes=-20', 'bytes=-21', 'bytes=-999999999999', 'bytes=-99999999999999999999999']) {
    const res = await get(range)
    const start = range === 'bytes=-19' ? 1 : 0
    t.equal(res.statusCode, 206, range)
    t.equal(res.headers['content-range'], `bytes ${start}-19/20`, range)
    t.equal(res.body, data.subarray(start).toString(), range)
  }
  const zero = await get('bytes=-0')
  t.equal(zero.statusCode, 416, 'bytes=-0')
  t.equal(zero.headers['content-range'], 'bytes */20')
  const empty = json(await upload(app, user, [file('')]))
  const emptySuffix = await app.inject({ method: 'GET', url: `/v1/media/${empty.id}`, headers: { range: 'bytes=-1' } })
  t.equal(emptySuffix.statusCode, 200, 'a suffix of an empty file is the whole (empty) file')
  t.equal(emptySuffix.body, '')

  const stale = await get('bytes=0-3', { 'if-range': '"sha256-stale"' })
  t.equal(stale.statusCode, 200, 'a stale If-Range gets the whole file')
  t.equal(stale.body, data.toString())
  const current = await get('bytes=0-3', { 'if-range': `"sha256-${media.sha256}"` })
  t.equal(current.statusCode, 206)
})

t.test('GET with a malformed, traversing or unknown id', async t => {
  for (const url of ['/v1/media/not-a-uuid', '/v1/media/..%2F..%2Fetc%2Fpasswd', '/v1/media/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10.png']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 422, url)
    t.equal(json(res).code, 'ValidationFailed', url)
  }
  const res = await app.inject({ method: 'GET', url: '/v1/media/7f1d3c1e-8b1a-4c39-9a0e-2f1c7e5d9b10' })
  t.equal(res.statusCode, 404)
  t.equal(json(res).code, 'MediaNotFound')
})

t.test('an upload over MAX_UPLOAD_BYTES is 413 and leaves nothing behind', async t => {
  const app = await build(t, { env: { MAX_UPLOAD_BYTES: '1024' } })
  const user = await createUploader(app)
  const atLimit = await upload(app, user, [file(randomBytes(1024))])
  t.equal(atLimit.statusCode, 201, 'exactly the limit is fine')
  const before = await snapshot(app)

  const over = await upload(app, user, [file(randomBytes(1025))])
  t.equal(over.statusCode, 413)
  t.match(over.headers['content-type'], /^application\/problem\+json/)
  t.equal(json(over).code, 'PayloadTooLarge')
  const far = await upload(app, user, [file(randomBytes(64 * 1024))])
  t.equal(far.statusCode, 413)
  t.same(await snapshot(app), before, 'no partial or temporary file, no row')
})

t.test('the form takes one file field `file` and nothing else', async t => {
  const user = await createUploader(app)
  const before = await snapshot(app)
  const cases: Array<[string, Part[], string]> = [
    ['a second file', [file('one'), file('two')], '/file'],
    ['an unknown field before the file', [{ name: 'title', data: 'x' }, file('one')], '/title'],
    ['an unknown field after the file', [file('one'), { name: 'title', data: 'x' }], '/title'],
    ['a file under another name', [{ name: 'upload', filename: 'a.bin', data: 'one' }], '/upload'],
    ['`file` as a text field', [{ name: 'file', data: 'not a file' }], '/file'],
    ['no part at all', [], '/file']
  ]
  for (const [name, parts, field] of cases) {
    const res = await upload(app, user, parts)
    t.equal(res.statusCode, 422, name)
    t.equal(json(res).code, 'ValidationFailed', name)
    t.equal(json(res).errors?.[0]?.field, field, name)
  }
  t.same(await snapshot(app), before, 'nothing stored')
})

t.test('a multipart body that is cut off is 400 and leaves nothing behind', async t => {
  const user = await createUploader(app)
  const before = await snapshot(app)
  const whole = form([file(randomBytes(4096))])
  const res = await upload(app, user, whole.subarray(0, 3000))
  t.equal(res.statusCode, 400)
  t.equal(json(res).code, 'MalformedBody')
  t.same(await snapshot(app), before)
})

t.test('only multipart/form-data: other types are 415; JSON routes still refuse multipart', async t => {
  const user = await createUploader(app)
  for (const type of [
    'application/json',
    'text/plain',
    'image/png',
    'multipart/form-data',
    'multipart/form-data; charset=utf-8',
    'multipart/mixed; boundary=abc'
  ]) {
    const res = await app.inject({ method: 'POST', url: '/v1/media', headers: { ...user.headers, 'content-type': type }, payload: '{}' })
    t.equal(res.statusCode, 415, type)
    t.equal(json(res).code, 'UnsupportedMediaType', type)
  }
  const empty = await app.inject({ method: 'POST', url: '/v1/media', headers: user.headers })
  t.equal(empty.statusCode, 415, 'no body at all')
  const json415 = await app.inject({
    method: 'POST',
    url: '/v1/profiles',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    payload: form([file('x')])
  })
  t.equal(json415.statusCode, 415, 'a JSON route refuses multipart')
})

t.test('POST /v1/media needs an active user', async t => {
  const before = await snapshot(app)
  const none = await upload(app, undefined, [file(PNG)])
  t.equal(none.statusCode, 401)
  t.equal(json(none).code, 'NotAuthenticated')
  t.equal(none.headers['www-authenticate'], 'Bearer')
  const bad = await upload(app, undefined, [file(PNG)], { authorization: 'Bearer a.b.c' })
  t.equal(bad.statusCode, 401)
  t.equal(json(bad).code, 'InvalidCredentials')
  const banned = await createUser(app, { active: false })
  const res = await upload(app, banned, [file(PNG)])
  t.equal(res.statusCode, 403)
  t.equal(json(res).code, 'UserIsBanned')
  t.same(await snapshot(app), before)
})

/** Random bytes, generated chunk by chunk (never held whole). */
function * generated (size: number, chunk = MiB): Generator<Buffer> {
  for (let sent = 0; sent < size; sent += chunk) yield randomBytes(Math.min(chunk, size - sent))
}

t.test('a file larger than the 50 MiB chunk size streams through byte-exact', async t => {
  const user = await createUploader(app)
  const port = await listen()
  const size = 50 * MiB + 12345
  const hash = createHash('sha256')
  const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(
      {
        port,
        host: '127.0.0.1',
        method: 'POST',
        path: '/v1/media',
        headers: { ...user.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
      },
      res => {
        let body = ''
        res
          .setEncoding('utf8')
          .on('data', (c: string) => {
            body += c
          })
          .on('end', () => resolve({ status: res.statusCode!, body }))
      }
    )
    req.on('error', reject)
    const parts = form([file(Buffer.alloc(0))])
      .toString('latin1')
      .split('\r\n\r\n')
    void (async () => {
      req.write(parts[0] + '\r\n\r\n')
      for (const chunk of generated(size)) {
        hash.update(chunk)
        if (!req.write(chunk)) await new Promise(resolve => req.once('drain', resolve))
      }
      req.end(`\r\n--${BOUNDARY}--\r\n`)
    })()
  })
  t.equal(res.status, 201, res.body)
  const media = JSON.parse(res.body)
  const expected = hash.digest('hex')
  t.equal(media.size, size)
  t.equal(media.sha256, expected)

  const download = await fetch(`http://127.0.0.1:${port}/v1/media/${media.id}`)
  t.equal(download.status, 200)
  t.equal(download.headers.get('content-length'), String(size))
  const back = createHash('sha256')
  for await (const chunk of download.body!) back.update(chunk)
  t.equal(back.digest('hex'), expected, 'the same bytes come back')

  const start = 50 * MiB - 10
  const ranged = await fetch(`http://127.0.0.1:${port}/v1/media/${media.id}`, { headers: { range: `bytes=${start}-${start + 19}` } })
  t.equal(ranged.status, 206)
  t.equal(ranged.headers.get('content-range'), `bytes ${start}-${start + 19}/${size}`)
  t.equal((await ranged.arrayBuffer()).byteLength, 20)
})

t.test('FormData from fetch (undici) is accepted with its own boundary', async t => {
  const user = await createUploader(app)
  const port = await listen()
  const body = new FormData()
  body.set('file', new Blob([PNG], { type: 'image/png' }), 'pic.png')
  const res = await fetch(`http://127.0.0.1:${port}/v1/media`, { method: 'POST', headers: user.headers, body })
  t.equal(res.status, 201)
  const media = (await res.json()) as { sha256: string; content_type: string }
  t.equal(media.sha256, sha256(PNG))
  t.equal(media.content_type, 'image/png')
})

t.test('a client that aborts mid-upload is logged once at info without a stack, never as a server error; nothing is kept', async t => {
  const logs: string[] = []
  const logged = await build(t, { logs, logLevel: 'info' })
  await logged.listen({ port: 0, host: '127.0.0.1' })
  const loggedPort = (logged.server.address() as AddressInfo).port
  const user = await createUploader(logged)
  const before = await snapshot(logged)
  const req = http.request({
    port: loggedPort,
    host: '127.0.0.1',
    method: 'POST',
    path: '/v1/media',
    headers: { ...user.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
  })
  req.on('error', () => {}) // the socket is destroyed on purpose
  req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`)
  for (const chunk of generated(4 * MiB)) req.write(chunk)
  while (!(await storedFiles(logged)).some(name => name.endsWith('.tmp'))) await sleep(10)
  req.destroy()
  while ((await storedFiles(logged)).some(name => name.endsWith('.tmp'))) await sleep(10)
  const lines = () => logs.map(l => JSON.parse(l) as Record<string, any>).filter(l => l.reqId !== undefined)
  // The abort line is written when the server notices the close: wait for it, at most 10 s.
  for (let waited = 0; waited < 10_000 && !lines().some(l => l.msg === 'request aborted by the client'); waited += 20) await sleep(20)
  // Give a late request line (the old 503) time to show up, then judge every line of the request.
  await logged.inject({ method: 'GET', url: '/health' })
  await sleep(200)
  const upload = lines().filter(l => l.req?.url === '/v1/media' || lines().some(o => o.reqId === l.reqId && o.req?.url === '/v1/media'))
  const ends = upload.filter(l => l.level >= 30)
  t.equal(ends.length, 1, 'one line at info or above')
  t.equal(ends[0].level, 30, 'at info')
  t.equal(ends[0].msg, 'request aborted by the client')
  t.notOk(JSON.stringify(ends[0]).includes('stack'), 'no stack')
  t.notOk(
    logs.some(l => (JSON.parse(l) as { level: number }).level >= 50),
    'nothing at error level'
  )
  const metrics = (await logged.inject({ method: 'GET', url: '/metrics' })).body
  t.notMatch(metrics, /http_request_duration_seconds_count\{[^}]*route="\/v1\/media"[^}]*status_code="5\d\d"/, 'no 5xx recorded for the upload')
  t.same(await snapshot(logged), before, 'no file (temporary or not) and no row')
})

t.test('a client that disconnects mid-upload leaves no file and no row', async t => {
  const user = await createUploader(app)
  const port = await listen()
  const before = await snapshot(app)
  const req = http.request({
    port,
    host: '127.0.0.1',
    method: 'POST',
    path: '/v1/media',
    headers: { ...user.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
  })
  req.on('error', () => {}) // the socket is destroyed on purpose
  req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`)
  for (const chunk of generated(4 * MiB)) req.write(chunk)
  // Wait until the server is writing the temporary file, then go away.
  while (!(await storedFiles(app)).some(name => name.endsWith('.tmp'))) await sleep(10)
  req.destroy()
  while ((await storedFiles(app)).some(name => name.endsWith('.tmp'))) await sleep(10)
  // The handler gives the upload's reserved room back after storage removed the file: at most 10 s.
  for (let waited = 0; waited < 10_000 && (await snapshot(app)).reservations > 0; waited += 10) await sleep(10)
  t.same(await snapshot(app), before, 'the temporary file is removed; no row, no reservation')
})
