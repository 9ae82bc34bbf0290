/**
 * Recorded traffic against the exported documents: a session that touches every operation
 * (successes, conditional answers and the error answers: 400, 401, 403, 404, 406, 409, 412, 415,
 * 422, 429, 503) is recorded, then each exchange is checked against the committed openapi/v1.json or
 * v2.json the way a validating proxy would: the operation exists, the status is declared, the
 * media type is declared (the most specific key), the body matches its schema (a standard Ajv
 * 2020 with ajv-formats), required headers are present, every contract header present is
 * declared and matches, and the declared security fits what the server asked for. A document
 * that drifts from the server fails here.
 */
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import Ajv2020 from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import type { FastifyInstance, InjectOptions } from 'fastify'
import t from 'tap'
import { createCreator, createUser, PASSWORD, verificationToken, type TestUser } from './fixtures.js'
import { build } from './helper.js'
import { RESET_SUBJECT } from '../src/domain/password-reset.js'
import { join } from 'node:path'
import { ROOT } from '../src/package-info.js'

type Doc = Record<string, any>
/** The members of an OpenAPI document (not schema keywords). */
const DOCUMENT_MEMBERS = ['openapi', 'info', 'servers', 'tags', 'paths', 'components', 'security', 'webhooks', 'externalDocs', 'jsonSchemaDialect']
interface Exchange {
  method: string
  url: string
  auth: boolean
  request: InjectOptions
  status: number
  headers: Record<string, string>
  body: Buffer
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch']
/** Headers that are part of the contract: when the server sends one, the document must declare it. */
const CONTRACT_HEADERS = [
  'etag',
  'location',
  'link',
  'retry-after',
  'deprecation',
  'sunset',
  'idempotent-replayed',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'www-authenticate',
  'content-range',
  'accept-ranges'
]
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64')
const BOUNDARY = '----roja-replay-boundary'
const MISSING = '0b9c7c36-5d3c-4f7e-9a55-2a0d8f6b1c42'
const load = (version: string): Doc => JSON.parse(readFileSync(join(ROOT, 'openapi', `${version}.json`), 'utf8'))

class Recorder {
  readonly exchanges: Exchange[] = []
  constructor (private readonly app: FastifyInstance) {}

  async send (
    method: string,
    url: string,
    options: { user?: TestUser; headers?: Record<string, string>; body?: unknown; raw?: string | Buffer; type?: string } = {}
  ) {
    const headers: Record<string, string> = { ...options.user?.headers, ...options.headers }
    const request: InjectOptions = { method: method as InjectOptions['method'], url, headers }
    if (options.raw !== undefined) {
      request.payload = options.raw
      headers['content-type'] = options.type ?? 'application/json'
    } else if (options.body !== undefined) request.payload = options.body as object
    const res = await this.app.inject(request)
    this.exchanges.push({
      method,
      url,
      auth: 'authorization' in headers,
      request,
      status: res.statusCode,
      headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k.toLowerCase(), String(v)])),
      body: res.rawPayload
    })
    return { status: res.statusCode, headers: res.headers, json: () => JSON.parse(res.body) }
  }
}

/** The session: every operation, with the answers a client meets. */
async function record (app: FastifyInstance, r: Recorder) {
  const ada = await createCreator(app, { username: 'ada', verified: true })
  const grace = await createUser(app, { username: 'grace', verified: true })
  const hedy = await createUser(app, { username: 'hedy' })
  const banned = await createUser(app, { username: 'mallory', active: false })

  await r.send('GET', '/health')
  await r.send('GET', '/version')
  await r.send('GET', '/v1/posts', { headers: { accept: 'application/xml' } })
  await r.send('GET', '/v1/posts?access_token=abc')

  // people
  const signUp = { username: 'Linus', email: 'linus@example.com', password: PASSWORD, first_name: 'Linus' }
  const linus = (await r.send('POST', '/v1/profiles', { body: signUp, headers: { 'idempotency-key': 'k-1' } })).json()
  await r.send('POST', '/v1/profiles', { body: signUp, headers: { 'idempotency-key': 'k-1' } })
  await r.send('POST', '/v1/profiles', { body: { ...signUp, username: 'linus2' } })
  await r.send('POST', '/v1/profiles', { body: { ...signUp, username: 'me', email: 'me@example.com' } })
  await r.send('POST', '/v1/profiles', { raw: '{"username": ' })
  await r.send('POST', '/v1/profiles', { raw: 'username=x', type: 'text/plain' })
  await r.send('POST', '/v1/auth/token', { body: { username: 'linus', password: PASSWORD } })
  await r.send('POST', '/v1/auth/token', {
    raw: `grant_type=password&username=linus&password=${encodeURIComponent(PASSWORD)}`,
    type: 'application/x-www-form-urlencoded'
  })
  await r.send('POST', '/v1/auth/token', { body: { username: 'linus', password: 'wrong password here' } })
  await r.send('POST', '/v1/auth/token', { body: { username: 'mallory', password: PASSWORD } })
  await r.send('GET', `/v1/profiles/${linus.id}`)
  const linusToken = (await verificationToken(app, 'linus@example.com'))!
  await r.send('POST', '/v1/email-verifications', { body: { token: `${linusToken.slice(0, -1)}${linusToken.endsWith('A') ? 'B' : 'A'}` } })
  await r.send('POST', '/v1/email-verifications', { body: { token: linusToken } })
  await r.send('POST', `/v1/users/${hedy.id}/verification-emails`, { user: hedy })
  await r.send('POST', `/v1/users/${grace.id}/verification-emails`, { user: grace })
  await r.send('POST', `/v1/users/${hedy.id}/email`, { user: hedy })
  await r.send('GET', `/v1/profiles/${MISSING}`)
  const me = await r.send('GET', '/v1/profiles/me', { user: ada })
  await r.send('GET', '/v1/profiles/me', { user: ada, headers: { 'if-none-match': String(me.headers.etag) } })
  await r.send('GET', '/v1/profiles/me')
  await r.send('GET', '/v1/profiles/me', { headers: { authorization: 'Bearer not.a.token' } })
  await r.send('GET', '/v1/profiles/me', { user: banned })
  await r.send('PUT', '/v1/profiles/me', {
    user: ada,
    body: { first_name: 'Ada', last_name: 'Lovelace' },
    headers: { 'if-match': String(me.headers.etag) }
  })
  await r.send('PUT', '/v1/profiles/me', { user: ada, body: { first_name: 'Ada' }, headers: { 'if-match': '"stale"' } })
  await r.send('PATCH', '/v1/profiles/me', {
    user: ada,
    raw: JSON.stringify({ favorite_band: 'Queen', website: null }),
    type: 'application/merge-patch+json'
  })
  await r.send('PATCH', '/v1/profiles/me', { user: ada, raw: JSON.stringify({ first_name: null }), type: 'application/merge-patch+json' })
  // the account: a reset, a password change, an address change, signing out everywhere, leaving
  const kay = await createUser(app, { username: 'kay', verified: true })
  const signIn = async () => ({
    ...kay,
    headers: {
      authorization: `Bearer ${(await r.send('POST', '/v1/auth/token', { body: { username: 'kay', password: PASSWORD } })).json().access_token as string}`
    }
  })
  await r.send('POST', '/v1/password-resets', { body: { email: 'kay@example.com' } })
  await r.send('POST', '/v1/password-resets', { body: { email: 'kay@example.com', username: 'kay' } })
  const resetMail = await app.db
    .selectFrom('outbox_message')
    .select('body')
    .where('to_address', '=', 'kay@example.com')
    .where('subject', '=', RESET_SUBJECT)
    .executeTakeFirstOrThrow()
  const resetToken = /[?&]token=([\w-]+)/.exec(resetMail.body)![1]
  await r.send('POST', '/v1/password-resets/confirmations', { body: { token: 'A'.repeat(22), new_password: PASSWORD } })
  await r.send('POST', '/v1/password-resets/confirmations', { body: { token: resetToken, new_password: PASSWORD } })
  const kayNow = await signIn()
  await r.send('PUT', '/v1/profiles/me/password', { user: kayNow, body: { current_password: 'wrong password here', new_password: PASSWORD } })
  const changed = (
    await r.send('PUT', '/v1/profiles/me/password', { user: kayNow, body: { current_password: PASSWORD, new_password: PASSWORD } })
  ).json()
  const kayFresh = { ...kay, headers: { authorization: `Bearer ${changed.access_token as string}` } }
  await r.send('POST', '/v1/profiles/me/email-changes', { user: kayFresh, body: { current_password: PASSWORD, email: 'kay@new.example' } })
  await r.send('POST', '/v1/profiles/me/email-changes', {
    user: kayFresh,
    body: { current_password: 'wrong password here', email: 'kay@new.example' }
  })
  await r.send('DELETE', '/v1/profiles/me', { user: kayFresh, body: { current_password: 'wrong password here' } })
  await r.send('DELETE', '/v1/profiles/me/tokens', { user: kayFresh })
  await r.send('DELETE', '/v1/profiles/me/tokens', { user: kayFresh })
  await r.send('DELETE', '/v1/profiles/me', { user: await signIn(), body: { current_password: PASSWORD } })
  await r.send('GET', `/v1/creators/${ada.id}`)
  await r.send('GET', `/v1/creators/${grace.id}`)
  await r.send('GET', `/v1/creators/${ada.id}/posts?sort=-created_at,title`)

  // posts
  const post = (
    await r.send('POST', '/v1/posts', {
      user: ada,
      body: { type: 'ARTICLE', title: 'Notes', tags: ['history'] },
      headers: { 'idempotency-key': 'p-1' }
    })
  ).json()
  await r.send('POST', '/v1/posts', {
    user: ada,
    body: { type: 'ARTICLE', title: 'Notes', tags: ['history'] },
    headers: { 'idempotency-key': 'p-1' }
  })
  await r.send('POST', '/v1/posts', { user: ada, body: { type: 'ARTICLE', title: 'Notes' } })
  await r.send('POST', '/v1/posts', { user: grace, body: { type: 'ARTICLE', title: 'Not a creator' } })
  await r.send('POST', '/v1/posts', { body: { type: 'ARTICLE', title: 'No token' } })
  const draft = (await r.send('POST', '/v1/posts', { user: ada, body: { type: 'ARTICLE', title: 'Draft', published_at: null } })).json()
  const course = (await r.send('POST', '/v1/posts', { user: ada, body: { type: 'COURSE', title: 'Engine course' } })).json()
  await r.send('GET', '/v1/posts?limit=1&sort=title')
  await r.send('GET', '/v1/posts?limit=1&offset=1')
  await r.send('GET', '/v1/posts?sort=rating')
  const read = await r.send('GET', `/v1/posts/${post.id}`)
  await r.send('GET', `/v1/posts/${post.id}`, { headers: { 'if-none-match': String(read.headers.etag) } })
  await r.send('GET', `/v1/posts/${draft.id}`, { user: ada })
  await r.send('GET', `/v1/posts/${draft.id}`)
  await r.send('GET', `/v1/posts/${post.id}`, { headers: { authorization: 'Bearer not.a.token' } })
  await r.send('GET', '/v1/posts/not-a-uuid')
  await r.send('PUT', `/v1/posts/${post.id}`, {
    user: ada,
    body: { type: 'ARTICLE', title: 'Notes, revised' },
    headers: { 'if-match': String(read.headers.etag) }
  })
  await r.send('PUT', `/v1/posts/${post.id}`, { user: ada, body: { type: 'ARTICLE', title: 'Lost' }, headers: { 'if-match': '"stale"' } })
  await r.send('PUT', `/v1/posts/${post.id}`, { user: grace, body: { type: 'ARTICLE', title: 'Not mine' } })
  await r.send('PATCH', `/v1/posts/${post.id}`, {
    user: ada,
    raw: JSON.stringify({ body: 'Patched.', media_url: null }),
    type: 'application/merge-patch+json'
  })
  await r.send('PATCH', `/v1/posts/${post.id}`, {
    user: ada,
    raw: JSON.stringify([{ op: 'replace', path: '/body', value: 'x' }]),
    type: 'application/json-patch+json'
  })
  await r.send('PATCH', `/v1/posts/${post.id}`, { user: grace, body: { body: 'Not mine' } })
  await r.send('GET', '/v1/users/me/posts', { user: ada })
  await r.send('GET', `/v1/users/${ada.id}/posts/${draft.id}`, { user: ada })
  await r.send('GET', `/v1/users/${ada.id}/posts/${draft.id}`, { user: grace })
  await r.send('POST', `/v1/users/${grace.id}/email`, { user: grace })
  await r.send('GET', '/v2/posts?limit=1')
  await r.send('GET', '/v2/posts?cursor=forged')

  // reviews, comments, alerts
  const review = (await r.send('POST', `/v1/posts/${post.id}/reviews`, { user: grace, body: { rating: 5, text: 'Clear' } })).json()
  await r.send('POST', `/v1/posts/${post.id}/reviews`, { user: grace, body: { rating: 4 } })
  await r.send('POST', `/v1/posts/${MISSING}/reviews`, { user: grace, body: { rating: 4 } })
  await r.send('GET', `/v1/posts/${post.id}/reviews?sort=-rating`)
  await r.send('GET', `/v1/posts/${post.id}/reviews/${review.id}`)
  await r.send('GET', `/v1/posts/${post.id}/reviews/${MISSING}`)
  const comment = (await r.send('POST', `/v1/posts/${post.id}/comments`, { user: grace, body: { text: 'Note G' } })).json()
  await r.send('GET', `/v1/posts/${draft.id}/comments`, { user: ada })
  await r.send('GET', `/v1/posts/${post.id}/comments`)
  const c = await r.send('GET', `/v1/posts/${post.id}/comments/${comment.id}`, { user: grace })
  await r.send('PUT', `/v1/posts/${post.id}/comments/${comment.id}`, { user: ada, body: { text: 'Not mine' } })
  await r.send('PUT', `/v1/posts/${post.id}/comments/${comment.id}`, {
    user: grace,
    body: { text: 'Note G!' },
    headers: { 'if-match': String(c.headers.etag) }
  })
  await r.send('PATCH', `/v1/posts/${post.id}/comments/${comment.id}`, { user: grace, body: { text: 'Note G!!' } })
  await r.send('PATCH', `/v1/posts/${post.id}/comments/${comment.id}`, {
    user: grace,
    body: { text: 'Lost' },
    headers: { 'if-match': String(c.headers.etag) }
  })
  await r.send('DELETE', `/v1/posts/${post.id}/comments/${comment.id}`, { user: grace, headers: { 'if-match': '"stale"' } })
  await r.send('DELETE', `/v1/posts/${post.id}/comments/${comment.id}`, { user: grace })
  const alerts = (await r.send('GET', '/v1/alerts?kind=review', { user: ada })).json()
  const alert = alerts.alerts[0]
  await r.send('GET', `/v1/alerts/${alert.id}`, { user: ada })
  await r.send('GET', `/v1/alerts/${alert.id}`, { user: grace })
  await r.send('GET', `/v1/alerts/${MISSING}`, { user: ada })
  await r.send('POST', `/v1/alerts/${alert.id}/resend`, { user: ada })
  const MERGE = 'application/merge-patch+json'
  const ifMatch = (read: { headers: Record<string, unknown> }) => ({ 'if-match': String(read.headers.etag) })
  const hedys = (await r.send('POST', `/v1/posts/${post.id}/reviews`, { user: hedy, body: { rating: 2, text: 'Typo' } })).json()
  const rv = await r.send('GET', `/v1/posts/${post.id}/reviews/${hedys.id}`)
  await r.send('PUT', `/v1/posts/${post.id}/reviews/${hedys.id}`, { user: hedy, body: { rating: 3 }, headers: ifMatch(rv) })
  await r.send('PUT', `/v1/posts/${post.id}/reviews/${hedys.id}`, { user: grace, body: { rating: 1 } })
  await r.send('PATCH', `/v1/posts/${post.id}/reviews/${hedys.id}`, { user: hedy, raw: JSON.stringify({ text: 'Fixed' }), type: MERGE })
  await r.send('PATCH', `/v1/posts/${post.id}/reviews/${hedys.id}`, { user: hedy, body: { rating: null } })
  await r.send('DELETE', `/v1/posts/${post.id}/reviews/${hedys.id}`, { user: hedy, headers: { 'if-match': '"stale"' } })
  await r.send('DELETE', `/v1/posts/${post.id}/reviews/${hedys.id}`, { user: hedy })
  await r.send('DELETE', `/v1/posts/${post.id}/reviews/${hedys.id}`, { user: hedy })

  // media
  const form = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="dot.png"\r\nContent-Type: image/png\r\n\r\n`),
    PNG,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`)
  ])
  const media = (await r.send('POST', '/v1/media', { user: grace, raw: form, type: `multipart/form-data; boundary=${BOUNDARY}` })).json()
  await r.send('POST', '/v1/media', { raw: form, type: `multipart/form-data; boundary=${BOUNDARY}` })
  await r.send('POST', '/v1/media', { user: grace, body: { file: 'x' } })
  await r.send('GET', '/v1/users/me/media', { user: grace })
  await r.send('GET', `/v1/media/${media.id}`, { headers: { accept: 'application/json' } })
  const bytes = await r.send('GET', `/v1/media/${media.id}`)
  await r.send('GET', `/v1/media/${media.id}`, { headers: { 'if-none-match': String(bytes.headers.etag) } })
  await r.send('GET', `/v1/media/${media.id}`, { headers: { accept: 'image/*', range: 'bytes=0-9' } })
  await r.send('GET', `/v1/media/${media.id}`, { headers: { range: 'bytes=5000-' } })
  await r.send('GET', `/v1/media/${media.id}`, { headers: { accept: 'text/html' } })
  await r.send('GET', `/v1/media/${MISSING}`)
  const mistake = (await r.send('POST', '/v1/media', { user: grace, raw: form, type: `multipart/form-data; boundary=${BOUNDARY}` })).json()
  await r.send('DELETE', `/v1/media/${mistake.id}`, { user: ada })
  await r.send('DELETE', `/v1/media/${mistake.id}`, { user: grace, headers: { 'if-match': '"stale"' } })
  await r.send('DELETE', `/v1/media/${mistake.id}`, { user: grace })
  await r.send('DELETE', `/v1/media/${mistake.id}`, { user: grace })

  // shops and products
  const shop = (await r.send('POST', '/v1/shops', { user: ada, body: { name: 'Engine Parts' } })).json()
  await r.send('POST', '/v1/shops', { user: grace, body: { name: 'No' } })
  await r.send('GET', '/v1/shops?sort=name')
  const s = await r.send('GET', `/v1/shops/${shop.id}`)
  await r.send('PUT', `/v1/shops/${shop.id}`, { user: ada, body: { name: 'Engine Parts Ltd' }, headers: { 'if-match': String(s.headers.etag) } })
  await r.send('PATCH', `/v1/shops/${shop.id}`, {
    user: ada,
    raw: JSON.stringify({ description: 'Brass gears.' }),
    type: 'application/merge-patch+json'
  })
  await r.send('PATCH', `/v1/shops/${shop.id}`, { user: grace, body: { name: 'Not mine' } })
  const product = (
    await r.send('POST', `/v1/shops/${shop.id}/products`, { user: ada, body: { name: 'Cards', price_cents: 2500, currency: 'GBP' } })
  ).json()
  await r.send('POST', `/v1/shops/${shop.id}/products`, { user: ada, body: { name: 'Cards', price_cents: 1, currency: 'XXX' } })
  await r.send('GET', `/v1/shops/${shop.id}/products?currency=GBP`)
  const p = await r.send('GET', `/v1/shops/${shop.id}/products/${product.id}`)
  await r.send('GET', `/v1/shops/${shop.id}/products/${MISSING}`)
  await r.send('PUT', `/v1/shops/${shop.id}/products/${product.id}`, {
    user: ada,
    body: { name: 'Cards', price_cents: 2600, currency: 'GBP' },
    headers: { 'if-match': String(p.headers.etag) }
  })
  await r.send('PATCH', `/v1/shops/${shop.id}/products/${product.id}`, {
    user: ada,
    raw: JSON.stringify({ price_cents: 2700 }),
    type: 'application/merge-patch+json'
  })
  await r.send('PATCH', `/v1/shops/${shop.id}/products/${product.id}`, { user: ada, body: { currency: 'XXX' } })
  await r.send('DELETE', `/v1/shops/${shop.id}/products/${product.id}`, { user: grace })
  await r.send('DELETE', `/v1/shops/${shop.id}/products/${product.id}`, { user: ada })
  await r.send('DELETE', `/v1/shops/${shop.id}`, { user: ada })
  await r.send('GET', `/v1/shops/${shop.id}`)

  // courses, classes
  const chapter = (await r.send('POST', `/v1/courses/${course.id}/chapters`, { user: ada, body: { title: 'Cards' } })).json()
  await r.send('POST', `/v1/courses/${course.id}/chapters`, { user: grace, body: { title: 'Not mine' } })
  const lesson = (
    await r.send('POST', `/v1/courses/${course.id}/chapters/${chapter.id}/lessons`, { user: ada, body: { title: 'Loops', position: 1 } })
  ).json()
  await r.send('GET', `/v1/courses/${course.id}`)
  await r.send('GET', `/v1/courses/${post.id}`)
  await r.send('GET', `/v1/courses/${course.id}/chapters`)
  await r.send('GET', `/v1/chapters/${chapter.id}`)
  await r.send('GET', `/v1/courses/${course.id}/chapters/${chapter.id}/lessons?sort=position`)
  await r.send('GET', `/v1/lessons/${lesson.id}`)
  await r.send('GET', `/v1/lessons/${MISSING}`)
  const klass = (
    await r.send('POST', '/v1/classes', { user: ada, body: { name: 'Winter group', course_id: course.id, starts_date: '2027-01-11' } })
  ).json()
  await r.send('GET', '/v1/classes', { user: grace })
  await r.send('GET', `/v1/classes/${klass.id}`, { user: grace })
  const student = (await r.send('POST', `/v1/classes/${klass.id}/students`, { user: ada, body: { first_name: 'Mary', sex: 'F' } })).json()
  await r.send('GET', `/v1/classes/${klass.id}/students?page=1&count=1`, { user: ada })
  await r.send('GET', `/v1/classes/${klass.id}/students?page=1&limit=1`, { user: ada })
  await r.send('GET', `/v1/classes/${klass.id}/students`, { user: grace })
  const st = await r.send('GET', `/v1/classes/${klass.id}/students/${student.id}`, { user: ada })
  const mary = { first_name: 'Mary', last_name: 'Somerville', sex: 'F' }
  await r.send('PUT', `/v1/classes/${klass.id}/students/${student.id}`, { user: ada, body: mary, headers: ifMatch(st) })
  await r.send('PATCH', `/v1/classes/${klass.id}/students/${student.id}`, {
    user: ada,
    raw: JSON.stringify({ email: 'mary@example.com' }),
    type: MERGE
  })
  await r.send('PATCH', `/v1/classes/${klass.id}/students/${student.id}`, { user: grace, body: { first_name: 'Not mine' } })
  await r.send('DELETE', `/v1/classes/${klass.id}/students/${student.id}`, { user: ada, headers: { 'if-match': '"stale"' } })
  await r.send('DELETE', `/v1/classes/${klass.id}/students/${student.id}`, { user: ada })
  const k = await r.send('GET', `/v1/classes/${klass.id}`, { user: ada })
  await r.send('PUT', `/v1/classes/${klass.id}`, { user: ada, body: { name: 'Spring group' }, headers: ifMatch(k) })
  await r.send('PATCH', `/v1/classes/${klass.id}`, { user: ada, raw: JSON.stringify({ starts_date: '2027-04-01' }), type: MERGE })
  await r.send('PATCH', `/v1/classes/${klass.id}`, { user: ada, body: { name: null } })
  await r.send('DELETE', `/v1/classes/${klass.id}`, { user: grace })
  await r.send('DELETE', `/v1/classes/${klass.id}`, { user: ada })
  const second = (await r.send('POST', `/v1/courses/${course.id}/chapters`, { user: ada, body: { title: 'Loops' } })).json()
  const ch = await r.send('GET', `/v1/chapters/${second.id}`)
  await r.send('PUT', `/v1/chapters/${second.id}`, { user: ada, body: { title: 'Loops and cards', position: 1 }, headers: ifMatch(ch) })
  await r.send('PATCH', `/v1/chapters/${second.id}`, { user: ada, raw: JSON.stringify({ position: 2 }), type: MERGE })
  await r.send('PATCH', `/v1/chapters/${second.id}`, { user: grace, body: { title: 'Not mine' } })
  const ls = await r.send('GET', `/v1/lessons/${lesson.id}`)
  await r.send('PUT', `/v1/lessons/${lesson.id}`, { user: ada, body: { title: 'Loops', body: 'Back the chain.' }, headers: ifMatch(ls) })
  await r.send('PATCH', `/v1/lessons/${lesson.id}`, { user: ada, raw: JSON.stringify({ body: null }), type: MERGE })
  await r.send('PATCH', `/v1/lessons/${lesson.id}`, { user: ada, body: { position: 0 } })
  await r.send('DELETE', `/v1/lessons/${lesson.id}`, { user: grace })
  await r.send('DELETE', `/v1/lessons/${lesson.id}`, { user: ada })
  await r.send('DELETE', `/v1/chapters/${chapter.id}`, { user: ada, headers: { 'if-match': '"stale"' } })
  await r.send('DELETE', `/v1/chapters/${chapter.id}`, { user: ada })
  await r.send('DELETE', `/v1/posts/${draft.id}`, { user: ada })
}

/** Finds the operation of a request: static segments beat parameters, as the router does. */
function findOperation (docs: Record<string, Doc>, method: string, url: string) {
  const path = url.split('?')[0]
  const version = /^\/(v\d+)\//.exec(path)?.[1] ?? 'v1'
  const doc = docs[version]
  let best: { template: string; op: Doc; score: number } | undefined
  for (const [template, item] of Object.entries<Doc>(doc.paths)) {
    const op = item[method.toLowerCase()]
    if (!op) continue
    const a = template.split('/')
    const b = path.split('/')
    if (a.length !== b.length) continue
    let score = 0
    let ok = true
    for (let i = 0; i < a.length; i++) {
      if (a[i] === b[i]) score++
      else if (!/^\{\w+\}$/.test(a[i])) {
        ok = false
        break
      }
    }
    if (ok && (!best || score > best.score)) best = { template, op, score }
  }
  return best && { doc, version, ...best }
}

/** The declared media type that applies to a content type: the exact one, then type/*, then *\/*. */
function declaredMedia (content: Doc | undefined, contentType: string) {
  if (!content) return undefined
  const type = contentType.split(';')[0].trim().toLowerCase()
  return content[type] ?? content[`${type.split('/')[0]}/*`] ?? content['*/*']
}

t.test('recorded traffic of every operation matches the exported documents', async t => {
  const app = await build(t)
  const r = new Recorder(app)
  await record(app, r)
  // 429: a second app with a limit of one request per window
  const limited = await build(t, { env: { RATE_LIMIT_MAX: '1' } })
  const lr = new Recorder(limited)
  await lr.send('GET', '/v1/posts')
  await lr.send('GET', '/v1/posts')
  // 503: a third app shedding load (a heap ceiling of one byte)
  const shedding = await build(t, { env: { LOAD_SHEDDING: 'true', MAX_HEAP_BYTES: '1' } })
  for (let i = 0; i < 400 && !shedding.isUnderPressure(); i++) await sleep(25)
  const sr = new Recorder(shedding)
  await sr.send('GET', `/v1/posts/${MISSING}`)

  const docs = { v1: load('v1'), v2: load('v2') }
  // Generic error answers for every operation: an unknown query parameter (422), an Accept
  // without JSON (406, media negotiates its own), no token where one is needed (401).
  const user = await createUser(app)
  for (const doc of Object.values(docs)) {
    for (const [template, item] of Object.entries<Doc>(doc.paths)) {
      for (const method of HTTP_METHODS) {
        const op = item[method]
        if (!op) continue
        const url = template.replace(/\{(\w+)\}/g, MISSING)
        await r.send(method.toUpperCase(), `${url}?zz_unknown=1`, { user })
        await r.send(method.toUpperCase(), url, { user, headers: { accept: 'application/xml' } })
        if (op.security?.length === 1) await r.send(method.toUpperCase(), url)
      }
    }
  }

  const ajv = new Ajv2020.default({ strict: true, allErrors: true })
  formats.default(ajv)
  ajv.addVocabulary(DOCUMENT_MEMBERS)
  for (const [version, doc] of Object.entries(docs)) { ajv.addSchema({ ...doc, $id: `https://roja.dev/openapi/${version}.json` }, undefined, undefined, false) }
  const validator = (version: string, pointer: string) => {
    const id = `https://roja.dev/openapi/${version}.json${pointer}`
    return ajv.getSchema(id) ?? ajv.compile({ $ref: id })
  }
  const esc = (s: string) => s.replaceAll('~', '~0').replaceAll('/', '~1')

  const seen = new Map<string, Set<number>>()
  for (const x of [...r.exchanges, ...lr.exchanges, ...sr.exchanges]) {
    const where = `${x.method} ${x.url} → ${x.status}`
    const found = findOperation(docs, x.method, x.url)
    if (!found) {
      t.fail(`${where}: no operation in the document`)
      continue
    }
    const { version, template, op } = found
    // the unversioned operations (/health, /version) are in every document
    const key = /^\/v\d+\//.test(template) ? `${version} ${op.operationId}` : op.operationId
    if (!seen.has(key)) seen.set(key, new Set())
    seen.get(key)!.add(x.status)
    const response = op.responses[String(x.status)]
    if (!response) {
      t.fail(`${where}: status not declared for ${op.operationId}`)
      continue
    }
    const base = `#/paths/${esc(template)}/${x.method.toLowerCase()}/responses/${x.status}`

    // media type and body
    const contentType = x.headers['content-type'] ?? ''
    if (x.body.length === 0) {
      t.ok(!response.content || x.status === 304 || x.status === 204, `${where}: an empty body is declared`)
    } else {
      const media = declaredMedia(response.content, contentType)
      if (!media) {
        t.fail(`${where}: ${contentType} is not a declared media type`)
        continue
      }
      const type = Object.keys(response.content).find(k => response.content[k] === media)!
      if (/json/.test(contentType)) {
        const validate = validator(version, `${base}/content/${esc(type)}/schema`)
        t.ok(validate(JSON.parse(x.body.toString('utf8'))), `${where}: the body matches (${ajv.errorsText(validate.errors)})`)
      } else t.equal(media.schema?.format, 'binary', `${where}: bytes are declared as bytes`)
    }

    // headers
    const declared = Object.fromEntries(
      Object.entries<Doc>(response.headers ?? {}).map(([name, h]) => {
        const ref = typeof h.$ref === 'string' ? h.$ref.split('/').pop() : undefined
        return [
          name.toLowerCase(),
          {
            header: ref ? found.doc.components.headers[ref] : h,
            pointer: ref ? `#/components/headers/${ref}/schema` : `${base}/headers/${esc(name)}/schema`
          }
        ]
      })
    )
    for (const [name, { header }] of Object.entries(declared)) {
      if (header.required) t.ok(name in x.headers, `${where}: the required ${name} header is sent`)
    }
    for (const name of CONTRACT_HEADERS) {
      if (!(name in x.headers)) continue
      const d = declared[name]
      if (!d) {
        t.fail(`${where}: ${name} is sent but not declared`)
        continue
      }
      const validate = validator(version, d.pointer)
      t.ok(validate(x.headers[name]), `${where}: ${name} matches its schema (${ajv.errorsText(validate.errors)})`)
    }

    // security: a 401 without a token means the operation requires one; a public one never asks
    const security = JSON.stringify(op.security)
    const code = /json/.test(contentType) && x.body.length > 0 ? JSON.parse(x.body.toString('utf8')).code : undefined
    if (code === 'NotAuthenticated') t.equal(security, '[{"bearerAuth":[]}]', `${where}: the document says a token is required`)
    if (x.auth && security === '[]') t.not(x.status, 401, `${where}: a public operation ignores tokens`)
  }

  // every operation was exercised, with a success and with an error answer
  for (const [version, doc] of Object.entries(docs)) {
    for (const item of Object.values<Doc>(doc.paths)) {
      for (const method of HTTP_METHODS) {
        const op = item[method]
        if (!op) continue
        const statuses = [...(seen.get(`${version} ${op.operationId}`) ?? seen.get(op.operationId) ?? [])]
        t.ok(
          statuses.some(s => s < 400),
          `${version} ${op.operationId}: a success was replayed (${statuses.join(', ')})`
        )
        t.ok(
          statuses.some(s => s >= 400),
          `${version} ${op.operationId}: an error was replayed`
        )
      }
    }
  }
  // and the statuses a client most needs to see are among them
  const all = new Set([...r.exchanges, ...lr.exchanges, ...sr.exchanges].map(x => x.status))
  for (const status of [200, 201, 202, 204, 206, 304, 400, 401, 403, 404, 406, 409, 412, 415, 416, 422, 429, 503]) {
    t.ok(all.has(status), `a ${status} was replayed`)
  }
})
