import { randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { assertOwner } from '../../../plugins/owner.js'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createCreator, createUser, type TestUser } from '../../fixtures.js'
import { build, json } from '../../helper.js'
import { createPost } from '../../post-fixtures.js'
import { deleteMedia } from '../../../src/domain/media.js'
import type { MediaStorage } from '../../../src/domain/storage.js'

/**
 * DELETE /v1/media/{mediaId}: the uploader only; the row, the bytes in DATA_DIR/media and the
 * owner's own references to the URL go in one change, and the quota is free at once.
 */

const BOUNDARY = '----roja-delete-boundary-9c2e'
const HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n` +
  'Content-Type: application/octet-stream\r\n\r\n')
const TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`)

async function upload (app: FastifyInstance, user: TestUser, size = 1000) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/media',
    headers: { ...user.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    payload: Buffer.concat([HEAD, randomBytes(size), TAIL])
  })
  return res
}

async function uploaded (app: FastifyInstance, user: TestUser, size = 1000) {
  const res = await upload(app, user, size)
  if (res.statusCode !== 201) throw new Error(`upload: ${res.statusCode} ${res.body}`)
  return json(res)
}

const files = async (app: FastifyInstance) => (await readdir(join(app.config.dataDir, 'media'))).sort()
const usage = async (app: FastifyInstance, user: TestUser) =>
  json(await app.inject({ method: 'GET', url: '/v1/users/me/media', headers: user.headers }))

t.test('the uploader deletes a medium: 204, the bytes leave storage, the quota is free at once, a second DELETE is 404', async (t) => {
  const app = await build(t, { env: { MEDIA_QUOTA_BYTES: '3000' } })
  const user = await createUser(app, { verified: true })
  const stranger = await createUser(app, { verified: true })
  const first = await uploaded(app, user, 2000)
  const second = await uploaded(app, user, 1000)
  t.equal((await upload(app, user, 1)).statusCode, 413, 'the quota is full')
  t.match(await usage(app, user), { total: 2, used_bytes: 3000, available_bytes: 0 })
  t.same(await files(app), [first.id, second.id].sort())
  const url = `/v1/media/${first.id}`

  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 401)
  const notOwner = await app.inject({ method: 'DELETE', url, headers: stranger.headers })
  t.equal(notOwner.statusCode, 403)
  t.equal(json(notOwner).code, 'UserNotOwner')
  const stale = await app.inject({ method: 'DELETE', url, headers: { ...user.headers, 'if-match': '"stale"' } })
  t.equal(stale.statusCode, 412)
  t.equal(json(stale).code, 'PreconditionFailed')
  t.same(await files(app), [first.id, second.id].sort(), 'nothing removed by the refused requests')
  t.equal((await app.inject({ method: 'GET', url, headers: { accept: 'application/octet-stream' } })).statusCode, 200)

  const etag = (await app.inject({ method: 'GET', url, headers: { accept: 'application/json' } })).headers.etag as string
  const res = await app.inject({ method: 'DELETE', url, headers: { ...user.headers, 'if-match': etag } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.same(await files(app), [second.id], 'the file is gone from the media directory')
  t.equal((await app.db.selectFrom('media').select('id').where('id', '=', first.id).execute()).length, 0)
  t.equal(json(await app.inject({ method: 'GET', url, headers: { accept: 'application/json' } })).code, 'MediaNotFound')
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 404, 'the URL answers 404')
  t.match(await usage(app, user), { total: 1, used_bytes: 1000, available_bytes: 2000 }, 'the quota is free at once')
  t.equal((await upload(app, user, 2000)).statusCode, 201, 'and an upload fits into it')
  const again = await app.inject({ method: 'DELETE', url, headers: user.headers })
  t.equal(again.statusCode, 404, 'a second DELETE is 404')
  t.equal(json(again).code, 'MediaNotFound')
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/media/nope', headers: user.headers })).statusCode, 422)
})

t.test('deleting a medium clears the owner\'s avatar_url and posts\' media_url naming it; others\' copies stay and 404', async (t) => {
  const app = await build(t)
  const owner = await createCreator(app, { verified: true })
  const other = await createCreator(app)
  const medium = await uploaded(app, owner)
  const kept = await uploaded(app, owner)
  const withMedium = await createPost(app, owner, { media_url: medium.url })
  const withKept = await createPost(app, owner, { media_url: kept.url })
  const othersPost = await createPost(app, other, { media_url: medium.url })
  const avatar = (user: TestUser, url: string) =>
    app.inject({ method: 'PATCH', url: '/v1/profiles/me', headers: user.headers, payload: { avatar_url: url } })
  const profile = await avatar(owner, `${medium.url}?size=64`)
  t.equal(profile.statusCode, 200, profile.body)
  const othersAvatar = await avatar(other, medium.url)
  t.equal(othersAvatar.statusCode, 200)
  const postEtag = (await app.inject({ method: 'GET', url: `/v1/posts/${withMedium.id}` })).headers.etag

  t.equal((await app.inject({ method: 'DELETE', url: `/v1/media/${medium.id}`, headers: owner.headers })).statusCode, 204)
  const post = await app.inject({ method: 'GET', url: `/v1/posts/${withMedium.id}` })
  t.equal(json(post).media_url, null, 'the owner\'s post no longer names it')
  t.not(post.headers.etag, postEtag, 'and has a new ETag')
  const read = async (url: string, user?: TestUser) => json(await app.inject({ method: 'GET', url, headers: user?.headers ?? {} }))
  t.equal((await read(`/v1/posts/${withKept.id}`)).media_url, kept.url, 'a post naming another medium keeps it')
  t.equal((await read('/v1/profiles/me', owner)).avatar_url, null, 'the owner\'s avatar is cleared')
  t.equal((await read(`/v1/posts/${othersPost.id}`)).media_url, medium.url, 'another person\'s post keeps its link')
  t.equal((await read('/v1/profiles/me', other)).avatar_url, medium.url)
  t.equal((await app.inject({ method: 'GET', url: medium.url.replace(/^https?:\/\/[^/]+/, '') })).statusCode, 404, 'which answers 404')
})

t.test('two deletes of one medium at once: one 204, one 404; the quota is freed once', async (t) => {
  const app = await build(t, { env: { MEDIA_QUOTA_BYTES: '5000' } })
  const user = await createUser(app, { verified: true })
  const media = [await uploaded(app, user, 1000), await uploaded(app, user, 1500), await uploaded(app, user, 2000)]
  const del = (id: string) => app.inject({ method: 'DELETE', url: `/v1/media/${id}`, headers: user.headers })
  const answers = await Promise.all([del(media[0].id), del(media[0].id), del(media[1].id), del(media[1].id)])
  t.same(answers.map(r => r.statusCode).sort(), [204, 204, 404, 404])
  t.match(await usage(app, user), { total: 1, used_bytes: 2000, available_bytes: 3000 })
  t.same(await files(app), [media[2].id])
})

t.test('deleteMedia: a storage that fails to remove the bytes rolls the change back; nothing is half done', async (t) => {
  const app = await build(t)
  const user = await createCreator(app, { verified: true })
  const medium = await uploaded(app, user)
  const post = await createPost(app, user, { media_url: medium.url })
  const failing: MediaStorage = { ...app.mediaStorage, remove: async () => { throw new Error('disk on fire') } }
  const owned = (callerId: string) => (row: { owner_id: string }) => assertOwner(callerId, row.owner_id)
  await t.rejects(deleteMedia(app.db, failing, user.id, medium.id, owned(user.id)), /disk on fire/)
  t.equal((await app.db.selectFrom('media').select('id').execute()).length, 1, 'the row is still there')
  t.equal(json(await app.inject({ method: 'GET', url: `/v1/posts/${post.id}` })).media_url, medium.url, 'and the reference')
  t.same(await files(app), [medium.id], 'and the bytes')
  const stranger = (await createUser(app)).id
  await t.rejects(deleteMedia(app.db, app.mediaStorage, stranger, medium.id, owned(stranger)), { code: 'UserNotOwner' })
  await deleteMedia(app.db, app.mediaStorage, user.id, medium.id, owned(user.id))
  t.same(await files(app), [])
})
