import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { sql } from '../src/db/kysely.js'
import { PASSWORD } from './fixtures.js'
import { build, dialect, json } from './helper.js'
import { newMail, signIn, signUpVerified, tokenStatus } from './account-fixtures.js'
import { grantCreator } from '../src/domain/users.js'
import { FORMER_MEMBER } from '../src/domain/account.js'
import { commands } from '../src/cli.js'

/**
 * DELETE /v1/profiles/me erases the person: afterwards no table, no stored file and no log line
 * of the run holds their username, addresses or names (docs/api.md, "Deleting an account").
 */

const BOUNDARY = '----roja-deletion-test'
function uploadBody (data: string): Buffer {
  return Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\n${data}\r\n--${BOUNDARY}--\r\n`
  )
}

/** Every row of every table (every column), as text, table by table. */
async function everyTable (app: FastifyInstance): Promise<Record<string, string>> {
  const names =
    dialect === 'postgres'
      ? (
          await sql<{
            name: string
          }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(
            app.db
          )
        ).rows
      : (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(app.db)).rows
  const out: Record<string, string> = {}
  for (const { name } of names) {
    const rows = (await sql`select * from ${sql.table(name)}`.execute(app.db)).rows
    out[name] = JSON.stringify(rows)
  }
  return out
}

const send = (app: FastifyInstance, method: 'POST' | 'PUT' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) =>
  app.inject({ method, url, headers, payload }).then(res => {
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.body ? json(res) : undefined
  })

t.test('a deleted account leaves nothing of the person in any table, stored file or log line', async t => {
  const logs: string[] = []
  const app = await build(t, { logs })
  // The person, with everything Roja lets a person have.
  const ada = await signUpVerified(app, 'augusta_ada', { first: 'Augusta', last: 'Byronic' })
  const grace = await signUpVerified(app, 'grace', { first: 'Grace', last: 'Hopper' })
  await grantCreator(app.db, 'augusta_ada')
  await grantCreator(app.db, 'grace')

  const media = await app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...ada.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    payload: uploadBody('Augusta Byronic, her own notes')
  })
  t.equal(media.statusCode, 201)
  const mediaUrl = json(media).url as string
  await send(app, 'PUT', '/v1/profiles/me', ada.headers, {
    first_name: 'Augusta',
    last_name: 'Byronic',
    avatar_url: mediaUrl,
    website: 'https://augusta.example'
  })
  const post = await send(app, 'POST', '/v1/posts', ada.headers, { type: 'ARTICLE', title: 'Byronic notes', body: 'by Augusta', media_url: mediaUrl })
  const gracePost = await send(app, 'POST', '/v1/posts', grace.headers, { type: 'ARTICLE', title: 'Grace on compilers', media_url: mediaUrl })
  await send(app, 'POST', `/v1/posts/${gracePost.id as string}/reviews`, ada.headers, { rating: 5, text: 'Augusta liked it' })
  await send(app, 'POST', `/v1/posts/${gracePost.id as string}/comments`, ada.headers, { text: 'a comment by Augusta' })
  await send(app, 'POST', `/v1/posts/${post.id as string}/comments`, grace.headers, { text: 'a reply from grace' })
  await send(app, 'POST', `/v1/posts/${post.id as string}/reviews`, grace.headers, { rating: 4 })
  const shop = await send(app, 'POST', '/v1/shops', ada.headers, { name: 'Byronic goods' })
  await send(app, 'POST', `/v1/shops/${shop.id as string}/products`, ada.headers, { name: 'Loom cards', price_cents: 500, currency: 'EUR' })
  const klass = await send(app, 'POST', '/v1/classes', ada.headers, { name: 'Engines with Augusta' })
  await send(app, 'POST', `/v1/classes/${klass.id as string}/students`, ada.headers, {
    first_name: 'Mary',
    last_name: 'Somerville',
    sex: 'F',
    email: 'mary.somerville@example.com'
  })
  const graceClass = await send(app, 'POST', '/v1/classes', grace.headers, { name: 'Compilers' })
  await send(app, 'POST', `/v1/classes/${graceClass.id as string}/students`, grace.headers, {
    first_name: 'A.',
    sex: 'F',
    email: 'Augusta_Ada@example.com'
  })
  const keyed = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: { ...ada.headers, 'idempotency-key': 'k-1' },
    payload: { type: 'ARTICLE', title: 'Keyed' }
  })
  t.equal(keyed.statusCode, 201)
  // mail about and to her: sent, and pending (a reset link, an address change, the account summary)
  await newMail(app)
  await send(app, 'POST', '/v1/password-resets', {}, { email: 'augusta_ada@example.com' })
  await send(app, 'POST', '/v1/profiles/me/email-changes', ada.headers, { current_password: PASSWORD, email: 'augusta.new@example.org' })
  await send(app, 'POST', `/v1/users/${ada.id}/email`, ada.headers)

  const needles = ['augusta_ada', 'augusta.new@example.org', 'Augusta', 'Byronic', 'Somerville', 'augusta.example']
  const before = await everyTable(app)
  for (const needle of needles.slice(0, 4)) {
    t.ok(
      Object.values(before).some(rows => rows.includes(needle)),
      `before: the data holds ${needle}`
    )
  }
  const mediaDir = join(app.config.dataDir, 'media')
  t.equal(readdirSync(mediaDir).length, 1, 'one stored file')

  const wrong = await app.inject({
    method: 'DELETE',
    url: '/v1/profiles/me',
    headers: ada.headers,
    payload: { current_password: 'not the password at all' }
  })
  t.equal(wrong.statusCode, 403, 'a wrong password deletes nothing')
  t.equal(json(wrong).code, 'WrongPassword')
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/profiles/me', headers: ada.headers })).statusCode, 422, 'the password is required')

  const res = await app.inject({ method: 'DELETE', url: '/v1/profiles/me', headers: ada.headers, payload: { current_password: PASSWORD } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')

  const after = await everyTable(app)
  for (const needle of needles) {
    const holding = Object.entries(after)
      .filter(([, rows]) => rows.toLowerCase().includes(needle.toLowerCase()))
      .map(([name]) => name)
    t.same(holding, [], `no table holds ${needle}`)
  }
  t.notOk(after.user.includes(ada.id), 'the user row is gone')
  t.same(readdirSync(mediaDir), [], 'the stored file is removed')
  await newMail(app)
  const mailDir = app.outbox.mailDir
  // .eml files are what was handed to the mail server: the delivered mail of the past, outside Roja's tables.
  t.ok(existsSync(mailDir))

  const students = json(await app.inject({ method: 'GET', url: `/v1/classes/${graceClass.id as string}/students`, headers: grace.headers })).students
  t.same(
    students.map((s: { first_name: string; email: string | null }) => [s.first_name, s.email]),
    [['A.', null]],
    "another's class keeps the student, not the address"
  )

  // What stays: grace, her post (its media_url now a dead link), and her alerts naming a former member.
  const graceAlerts = json(await app.inject({ method: 'GET', url: '/v1/alerts', headers: grace.headers })).alerts as Array<{ message: string }>
  t.equal(graceAlerts.length, 1, 'the alert of her comment stays; that of her review went with the review')
  t.ok(
    graceAlerts.every(a => a.message.startsWith(`${FORMER_MEMBER} left a `)),
    "others' alerts name a former member"
  )
  t.equal((await app.inject({ method: 'GET', url: `/v1/posts/${gracePost.id as string}` })).statusCode, 200, "others' posts stay")
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/posts/${gracePost.id as string}/comments` })).total, 0, 'her comments on them are gone')
  t.equal((await app.inject({ method: 'GET', url: `/v1/posts/${post.id as string}` })).statusCode, 404, 'her posts are gone')
  t.equal((await app.inject({ method: 'GET', url: new URL(mediaUrl).pathname })).statusCode, 404, 'her media are gone')
  t.equal((await app.inject({ method: 'GET', url: `/v1/profiles/${ada.id}` })).statusCode, 404)
  t.equal(await tokenStatus(app, ada.headers), 401, 'her token is dead')
  t.equal((await app.inject({ method: 'POST', url: '/v1/auth/token', payload: { username: 'augusta_ada', password: PASSWORD } })).statusCode, 401)

  await app.close()
  for (const needle of needles) {
    t.same(
      logs.filter(l => l.toLowerCase().includes(needle.toLowerCase())),
      [],
      `no log line holds ${needle}`
    )
  }
})

t.test('the username is free again at once; a deleted account cannot be deleted twice', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  t.equal(
    (await app.inject({ method: 'DELETE', url: '/v1/profiles/me', headers: ada.headers, payload: { current_password: PASSWORD } })).statusCode,
    204
  )
  t.equal(
    (await app.inject({ method: 'DELETE', url: '/v1/profiles/me', headers: ada.headers, payload: { current_password: PASSWORD } })).statusCode,
    401
  )
  const again = await signUpVerified(app, 'ada')
  t.not(again.id, ada.id, 'a new account with the same name is another account')
  t.equal(await tokenStatus(app, ada.headers), 401, 'the old token does not open the new account')
  t.equal(await tokenStatus(app, await signIn(app, 'ada')), 200)
})

t.test('wrong passwords on deletion count toward the sign-in limit', async t => {
  const app = await build(t, { env: { AUTH_RATE_LIMIT_MAX: '2' } })
  const ada = await signUpVerified(app, 'ada')
  const statuses: number[] = []
  for (let n = 0; n < 3; n++) {
    statuses.push(
      (
        await app.inject({
          method: 'DELETE',
          url: '/v1/profiles/me',
          headers: ada.headers,
          payload: { current_password: `guess ${n}` },
          remoteAddress: '10.3.0.1'
        })
      ).statusCode
    )
  }
  t.same(statuses, [403, 403, 429])
  t.equal(await tokenStatus(app, ada.headers), 200, 'the account stays')
})

t.test("the operator's `user delete <username>` erases the same way, files included", async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  const upload = await app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...ada.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    payload: uploadBody('bytes of ada')
  })
  t.equal(upload.statusCode, 201)
  const mediaDir = join(app.config.dataDir, 'media')
  t.equal(readdirSync(mediaDir).length, 1)
  const out = await commands['user delete'].run(app.db, [' ADA '], app.config)
  t.match(out, /^ada: the account and everything that was theirs is erased; the username is free$/)
  t.same(readdirSync(mediaDir), [], 'the file is removed')
  t.equal(await tokenStatus(app, ada.headers), 401)
  const tables = await everyTable(app)
  t.same(
    Object.entries(tables)
      .filter(([, rows]) => rows.includes('ada@example.com') || rows.includes(ada.id))
      .map(([name]) => name),
    []
  )
  await t.rejects(commands['user delete'].run(app.db, ['ada'], app.config), { code: 'ProfileNotFound' }, 'an unknown user fails (exit 1)')
})

t.test('a deletion racing uploads leaves no file and no row, whichever comes first', async t => {
  const app = await build(t)
  const ada = await signUpVerified(app, 'ada')
  const mediaDir = join(app.config.dataDir, 'media')
  const upload = () =>
    app.inject({
      method: 'POST',
      url: '/v1/media',
      headers: { ...ada.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      payload: uploadBody('x'.repeat(256 * 1024))
    })
  const [first, deleted, second] = await Promise.all([
    upload(),
    app.inject({ method: 'DELETE', url: '/v1/profiles/me', headers: ada.headers, payload: { current_password: PASSWORD } }),
    upload()
  ])
  t.equal(deleted.statusCode, 204)
  // An upload the deletion overtakes fails (the media rules refuse a row for an owner who is gone) and keeps nothing.
  for (const res of [first, second]) {
    if (res.statusCode !== 201) {
      t.same(
        [res.statusCode, JSON.parse(res.body).code],
        [401, 'InvalidCredentials'],
        'an upload the ' + 'deletion overtook is 401, as the token now is'
      )
    }
  }
  t.same(
    readdirSync(mediaDir).filter(f => !f.endsWith('.tmp')),
    [],
    'no file is left'
  )
  t.same(await app.db.selectFrom('media').selectAll().execute(), [])
  t.same(await app.db.selectFrom('media_upload').selectAll().execute(), [])
})
