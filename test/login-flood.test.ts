import t from 'tap'
import { build, json } from './helper.js'
import { createUser, PASSWORD } from './fixtures.js'
import { MAX_CONCURRENT_HASHES } from '../src/domain/passwords.js'

const BOUNDARY = '----roja-login-flood'
const LOGINS = 32

/**
 * Password hashing (scrypt) and file reads share libuv's thread pool. With logins queued ahead
 * of it, a media download must still be served at once, not after the queued hashes: judged by
 * how many logins finish while the download runs, never by wall-clock time. At the production
 * hashing cost: the suite's cheaper one would finish the flood before the download begins.
 */
t.test('a media download completes while a login flood is hashing', async (t) => {
  const app = await build(t, { env: { PASSWORD_HASH_COST: '15' } })
  const user = await createUser(app, { verified: true }) // uploads need a verified address
  const file = Buffer.from('x'.repeat(64 * 1024))
  const upload = await app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...user.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    payload: Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n`), file, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)])
  })
  t.equal(upload.statusCode, 201)
  const mediaId = json(upload).id

  let done = 0
  let firstDone!: () => void
  const first = new Promise<void>(resolve => { firstDone = resolve })
  const logins = Array.from({ length: LOGINS }, () =>
    app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: user.username, password: PASSWORD } })
      .then(res => { done++; firstDone(); return res.statusCode }))
  // Once a login has finished, every other one is past its database read and hashing or queued.
  await first
  const before = done
  const download = await app.inject({ method: 'GET', url: `/v1/media/${mediaId}` })
  const during = done - before
  t.equal(download.statusCode, 200)
  t.equal(download.body.length, file.length, 'the whole file')
  t.ok(done < LOGINS, `the download finished before the flood (${done} of ${LOGINS} logins done)`)
  // Those already hashing may finish meanwhile; the queued ones must not all go first (without
  // the limit, the file read waits behind about LOGINS - 4 hashes).
  t.ok(during <= MAX_CONCURRENT_HASHES + 2, `${during} logins finished while the file was read`)
  t.same(new Set(await Promise.all(logins)), new Set([200]), 'every login still succeeds')
})

t.test('hashing leaves at least one pool thread free', async (t) => {
  const pool = Number(process.env.UV_THREADPOOL_SIZE) || 4
  t.equal(MAX_CONCURRENT_HASHES, Math.max(1, pool - 1))
})
