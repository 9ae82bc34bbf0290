/**
 * A whole flow through the @hey-api/openapi-ts SDK, with no casts: sign-up, tokens, drafts,
 * conditional requests and media. test/sdk.test.ts generates the SDK from the committed
 * openapi/v1.json into a folder of its own, puts this file beside it (its `./sdk/v1/` imports),
 * type-checks the two together and runs the flow against a listening server: if the document
 * stopped saying what the server does (a header parameter, the optional token, the problem type,
 * the multipart body), the type-check or a step below fails.
 *
 * Outside test/ because the repository's type-check cannot see a generated SDK; `npm run
 * client:sdk` writes one to client/sdk/ (git-ignored), where these imports find it.
 */
import type { Test } from 'tap'
import { createClient, createConfig } from './sdk/v1/client/index.js'
import {
  createPost, createProfile, createToken, deletePost, getMedia, getMyProfile, getPost, listPosts, updatePost, uploadMedia,
  type PostCreate, type Problem, type ProfileCreateWritable, type TokenRequestWritable, type TokenResponse
} from './sdk/v1/index.js'

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64')
const PASSWORD = 'correct horse battery staple'

/** `makeCreator`: the operator action that makes a user a creator (npm run cli -- creator grant). */
export async function sdkFlow (t: Test, baseUrl: string, makeCreator: (username: string) => Promise<void>): Promise<void> {
  const client = createClient(createConfig({ baseUrl }))

  // sign-up, with an Idempotency-Key: the retry answers the same profile and creates nothing
  const body: ProfileCreateWritable = { username: 'ada', email: 'ada@example.com', password: PASSWORD, first_name: 'Ada' }
  const signedUp = await createProfile({ client, body, headers: { 'idempotency-key': 'sign-up-ada-1' } })
  t.equal(signedUp.response.status, 201, 'sign-up')
  t.equal(signedUp.response.headers.get('location'), `/v1/profiles/${signedUp.data?.id}`, 'Location names the new profile')
  const again = await createProfile({ client, body, headers: { 'idempotency-key': 'sign-up-ada-1' } })
  t.equal(again.response.status, 201)
  t.equal(again.response.headers.get('idempotent-replayed'), 'true')
  t.equal(again.data?.id, signedUp.data?.id, 'the replay is the first answer')

  // a token as JSON ...
  const credentials: TokenRequestWritable = { username: 'ada', password: PASSWORD }
  const byJson = await createToken({ client, body: credentials })
  t.equal(byJson.response.status, 200, 'token from JSON')
  const jsonToken: TokenResponse | undefined = byJson.data
  t.equal(jsonToken?.token_type, 'Bearer')
  // ... and as the RFC 6749 form: the same typed fields, written as the password grant
  const byForm = await createToken({
    client,
    body: credentials,
    bodySerializer: () => new URLSearchParams({ grant_type: 'password', ...credentials }).toString(),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' }
  })
  t.equal(byForm.response.status, 200, 'token from the form')
  const token = byForm.data?.access_token ?? ''
  t.ok(token.length > 20)

  const wrong = await createToken({ client, body: { username: 'ada', password: 'not the password at all' } })
  t.equal(wrong.response.status, 401)
  const problem: Problem | undefined = wrong.error
  t.equal(problem?.code, 'InvalidCredentials', 'errors arrive typed as problems')
  t.match(wrong.response.headers.get('content-type'), /^application\/problem\+json/)

  const me = await getMyProfile({ client, auth: token })
  t.equal(me.data?.email, 'ada@example.com', 'the bearer token is sent where the document asks for it')

  // an owner reads their own draft through a read whose token is optional
  await makeCreator('ada')
  const draft: PostCreate = { type: 'ARTICLE', title: 'Draft of the notes', published_at: null }
  const created = await createPost({ client, auth: token, body: draft, headers: { 'idempotency-key': 'draft-1' } })
  t.equal(created.response.status, 201)
  const postId = created.data?.id ?? ''
  t.equal(created.response.headers.get('location'), `/v1/posts/${postId}`, 'Location of the create')
  const asOwner = await getPost({ client, auth: token, path: { postId } })
  t.equal(asOwner.response.status, 200, 'the owner reads the draft')
  t.equal(asOwner.data?.published_at, null)
  const asAnyone = await getPost({ client, path: { postId } })
  t.equal(asAnyone.response.status, 404, 'anyone else does not')
  t.equal(asAnyone.error?.code, 'PostNotFound')
  const listed = await listPosts({ client, query: { sort: ['-created_at', 'title'], limit: 5 } })
  t.equal(listed.response.status, 200, 'sort as an array of the sortable fields')
  t.equal(listed.data?.total, 0, 'the draft is not listed')

  // If-None-Match → 304; If-Match with a stale ETag → 412, and nothing changes
  const etag = asOwner.response.headers.get('etag') ?? ''
  t.match(etag, /^"/)
  const notModified = await getPost({ client, auth: token, path: { postId }, headers: { 'if-none-match': etag } })
  t.equal(notModified.response.status, 304)
  const stale = await updatePost({ client, auth: token, path: { postId }, body: { ...draft, title: 'Lost update' }, headers: { 'if-match': '"stale"' } })
  t.equal(stale.response.status, 412)
  t.equal(stale.error?.code, 'PreconditionFailed')
  const updated = await updatePost({ client, auth: token, path: { postId }, body: { ...draft, title: 'Notes, revised' }, headers: { 'if-match': etag } })
  t.equal(updated.response.status, 200)
  t.equal(updated.data?.title, 'Notes, revised')
  t.not(updated.response.headers.get('etag'), etag, 'a new ETag')

  // an upload (multipart) and a download of the bytes
  const uploaded = await uploadMedia({ client, auth: token, body: { file: new Blob([PNG], { type: 'image/png' }) } })
  t.equal(uploaded.response.status, 201, 'upload')
  const mediaId = uploaded.data?.id ?? ''
  t.equal(uploaded.response.headers.get('location'), `/v1/media/${mediaId}`)
  t.equal(uploaded.data?.content_type, 'image/png')
  const metadata = await getMedia({ client, path: { mediaId }, headers: { Accept: 'application/json' } })
  // the document gives the download the metadata's type or the file's: JSON parsed into Media, bytes into a Blob
  t.equal(metadata.data instanceof Blob ? 'bytes' : metadata.data?.sha256, uploaded.data?.sha256, 'the metadata as JSON')
  const bytes = await getMedia({ client, path: { mediaId }, headers: { Accept: 'image/png' } })
  t.equal(bytes.response.status, 200)
  t.equal(bytes.response.headers.get('content-type'), 'image/png')
  t.ok(bytes.data instanceof Blob, 'the bytes arrive as a Blob')
  if (bytes.data instanceof Blob) t.same(Buffer.from(await bytes.data.arrayBuffer()), PNG, 'the bytes that were uploaded')
  const part = await getMedia({ client, path: { mediaId }, headers: { Accept: 'image/*', range: 'bytes=0-7' } })
  t.equal(part.response.status, 206)
  t.equal(part.response.headers.get('content-range'), `bytes 0-7/${PNG.length}`)
  if (part.data instanceof Blob) t.same(Buffer.from(await part.data.arrayBuffer()), PNG.subarray(0, 8), 'one range of them')
  else t.fail('a range arrives as a Blob')

  const removed = await deletePost({ client, auth: token, path: { postId }, headers: { 'if-match': updated.response.headers.get('etag') ?? '' } })
  t.equal(removed.response.status, 204)
}
