import { randomUUID } from 'node:crypto'
import { cachedRowStatement, cachedStatementPerShape } from '../db/statement-cache.js'
import type { Readable } from 'node:stream'
import parseRange from 'range-parser'
import { sql, type Selectable } from '../db/kysely.js'
import { AppError } from '../../schemas/problems.js'
import type { ByteRange, MediaStorage } from './storage.js'
import type { Media, MyMediaListQuery } from '../../schemas/media.js'
import type { Db, Executor } from '../db/dialect.js'
import type { MediaTable } from '../db/schema.js'
import { formatDateTime } from '../db/date-time-format.js'
import { clockMs, writeTimeIso } from '../db/clock.js'
import { lockedRow } from '../db/row-lock.js'
import { compiledList, type Page } from '../db/paging.js'
import { parseSort } from './list.js'

export type MediaRow = Selectable<MediaTable>

/** The file as stored, before it has a row. */
export interface StoredUpload {
  id: string
  storage_key: string
  size: number
  sha256: string
  content_type: string
}

/** file-type reads at most this many bytes from the start of a file. */
const SNIFF_BYTES = 4100
const UNKNOWN_TYPE = 'application/octet-stream'
const TEXT_TYPE = 'text/plain'

/**
 * Streams an upload into storage under the reservation's server-made key, keeping only its first
 * bytes to sniff the media type. The first byte past the reserved room stops it (413
 * StorageQuotaExceeded); storage leaves nothing behind when the stream fails.
 */
export async function storeUpload (storage: MediaStorage, file: Readable, reservation: UploadReservation): Promise<StoredUpload> {
  const id = reservation.id
  const head: Buffer[] = []
  let headLength = 0
  let size = 0
  async function * keepHead (chunks: AsyncIterable<Buffer>) {
    for await (const chunk of chunks) {
      size += chunk.length
      if (size > reservation.bytes) throw quotaExceeded(reservation)
      if (headLength < SNIFF_BYTES) {
        head.push(chunk.subarray(0, SNIFF_BYTES - headLength))
        headLength += Math.min(chunk.length, SNIFF_BYTES - headLength)
      }
      yield chunk
    }
  }
  const stored = await storage.put(id, keepHead(file))
  const contentType = await sniff(Buffer.concat(head), stored.size)
  return { id, storage_key: id, ...stored, content_type: contentType }
}

/**
 * The media type from the bytes, never from the client's claim: a known binary signature
 * (file-type), else text/plain when the first 4 KiB are UTF-8 text, else application/octet-stream.
 * Types a browser would run (markup, script) are text/plain whatever file-type says.
 */
export async function sniff (head: Buffer, size: number): Promise<string> {
  if (head.length === 0) return UNKNOWN_TYPE
  // file-type is loaded on the first upload: its signature tables are a sizeable part of idle memory
  const { fileTypeFromBuffer } = await import('file-type')
  const type = await fileTypeFromBuffer(head)
  if (type) return isActiveContent(type.mime) ? TEXT_TYPE : type.mime
  return isUtf8Text(head, size > head.length) ? TEXT_TYPE : UNKNOWN_TYPE
}

// HTML, any XML (SVG and XHTML start `<?xml`, which file-type names application/xml), scripts, Flash.
const ACTIVE =
  /^(?:text\/(?:html|xml|javascript|ecmascript)|application\/(?:xml|xhtml\+xml|javascript|ecmascript|x-shockwave-flash)|[a-z]+\/[^;\s]+\+xml)$/i

/** Would a browser run or render it as a document? Such uploads are stored and served as text/plain. */
export function isActiveContent (mediaType: string): boolean {
  return ACTIVE.test(mediaType.split(';')[0].trim())
}

// Control characters that plain text does not contain (tab, line feed, form feed, carriage return are fine).
const CONTROL = /[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f]/

function isUtf8Text (head: Buffer, cut: boolean): boolean {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  // A head cut off mid-file may end inside a multi-byte character: allow up to 3 bytes of it.
  for (let drop = 0; drop <= (cut ? 3 : 0); drop++) {
    try {
      return !CONTROL.test(decoder.decode(head.subarray(0, head.length - drop)))
    } catch {}
  }
  return false
}

export async function insertMedia (db: Executor, ownerId: string, upload: StoredUpload): Promise<MediaRow> {
  const row = { ...upload, owner_id: ownerId, created_at: writeTimeIso() }
  await db.insertInto('media').values(row).execute()
  return row
}

/** Room held for one upload against its owner's quota (a media_upload row): the file may take `bytes`. */
export interface UploadReservation {
  /** the media id and storage key the upload will have */
  id: string
  owner_id: string
  bytes: number
  /** what the quota left when the room was taken, uploads in progress counted */
  room: number
  quota: number
}

/** What a user's media take against the quota: stored files, and uploads in progress. */
export interface MediaUsage {
  files: number
  used_bytes: number
  reserved_bytes: number
}

const usageOf = cachedStatementPerShape((db, _: undefined, v: { owner_id: string; now: string; except?: string }) =>
  db
    .selectFrom('media')
    .where('media.owner_id', '=', v.owner_id)
    .select(eb => [
      eb.fn.countAll<number | string>().as('files'),
      eb.fn.coalesce(eb.fn.sum<number | string>('media.size'), sql<number>`0`).as('used_bytes'),
      eb
        .selectFrom('media_upload')
        .select(u => u.fn.coalesce(u.fn.sum<number | string>('media_upload.reserved_bytes'), sql<number>`0`).as('bytes'))
        .where('media_upload.owner_id', '=', v.owner_id)
        .where('media_upload.expires_at', '>', v.now)
        .$if(v.except !== undefined, q => q.where('media_upload.id', '!=', v.except!))
        .as('reserved_bytes')
    ])
)

/** The user's usage; `except` leaves one upload in progress out (the one being counted against the rest). */
export async function mediaUsage (db: Executor, ownerId: string, except?: string): Promise<MediaUsage> {
  const [row] = await usageOf(db, undefined, { owner_id: ownerId, now: new Date(clockMs()).toISOString(), except })
  return { files: Number(row?.files ?? 0), used_bytes: Number(row?.used_bytes ?? 0), reserved_bytes: Number(row?.reserved_bytes ?? 0) }
}

function quotaExceeded (r: Pick<UploadReservation, 'room' | 'quota'>): AppError {
  if (r.room === 0) {
    return new AppError(
      'StorageQuotaExceeded',
      `your storage quota of ${r.quota} bytes is used up (uploads in progress count); even an empty file needs room`
    )
  }
  return new AppError(
    'StorageQuotaExceeded',
    `the file is larger than the ${r.room} bytes left of your storage quota of ${r.quota} bytes (uploads in progress count)`
  )
}

function tooManyFiles (maxFiles: number): AppError {
  return new AppError('StorageQuotaExceeded', `you keep at most ${maxFiles} files (uploads in progress count); delete one to upload another`)
}

// Uploads in progress for the owner, held against the file count as their bytes are against the quota.
const uploadsInProgress = async (db: Executor, ownerId: string, now: string): Promise<number> => {
  const row = await db
    .selectFrom('media_upload')
    .select(eb => eb.fn.countAll<number | string>().as('n'))
    .where('owner_id', '=', ownerId)
    .where('expires_at', '>', now)
    .executeTakeFirst()
  return Number(row?.n ?? 0)
}

// Holds the user's row while the quota is counted, so two uploads cannot both take the same room;
// an account deleted meanwhile (its token was good when the request began) is 401, as its token now is.
async function lockOwner (trx: Executor, ownerId: string): Promise<void> {
  const found = await lockedRow(trx, trx.selectFrom('user').select('id').where('id', '=', ownerId))
  if (!found) throw new AppError('InvalidCredentials', 'the account no longer exists')
}

/**
 * Before any byte of an upload is read: takes room for it against the owner's quota, at most
 * `wanted` (what the request can hold: its Content-Length, the upload limit). Stored files and the
 * other uploads in progress are counted under the owner's row lock, so concurrent uploads share
 * the room and never both fit into it. The room lasts `ttlMs` at most: a process that dies
 * mid-upload holds it no longer than that.
 */
export async function reserveUpload (
  db: Db,
  ownerId: string,
  opts: { quota: number; maxFiles: number; wanted: number; ttlMs: number }
): Promise<UploadReservation> {
  const id = randomUUID()
  return db.transaction().execute(async trx => {
    await lockOwner(trx, ownerId)
    const now = clockMs()
    await trx.deleteFrom('media_upload').where('owner_id', '=', ownerId).where('expires_at', '<=', new Date(now).toISOString()).execute()
    const usage = await mediaUsage(trx, ownerId)
    // Files count as well as bytes: an empty file costs an inode and a row all the same.
    if (usage.files + (await uploadsInProgress(trx, ownerId, new Date(now).toISOString())) >= opts.maxFiles) throw tooManyFiles(opts.maxFiles)
    const room = Math.max(0, opts.quota - usage.used_bytes - usage.reserved_bytes)
    if (room === 0) throw quotaExceeded({ room, quota: opts.quota })
    const bytes = Math.min(room, Math.max(0, opts.wanted))
    await trx
      .insertInto('media_upload')
      .values({ id, owner_id: ownerId, reserved_bytes: bytes, expires_at: new Date(now + opts.ttlMs).toISOString() })
      .execute()
    return { id, owner_id: ownerId, bytes, room, quota: opts.quota }
  })
}

/** Gives the room back (an upload that failed); nothing when it is already gone. */
export async function releaseUpload (db: Db, reservation: UploadReservation): Promise<void> {
  await db.deleteFrom('media_upload').where('id', '=', reservation.id).execute()
}

/**
 * Records a stored upload in place of its reservation, in one transaction: the quota is counted
 * again under the owner's row lock (a reservation that outlived its time no longer counted), so
 * the stored files never go over it. A row exists only for a file that is complete on disk; a
 * file whose row could not be written is removed.
 */
export async function createMedia (db: Db, storage: MediaStorage, reservation: UploadReservation, upload: StoredUpload): Promise<MediaRow> {
  try {
    return await db.transaction().execute(async trx => {
      await lockOwner(trx, reservation.owner_id)
      const usage = await mediaUsage(trx, reservation.owner_id, reservation.id)
      const room = reservation.quota - usage.used_bytes - usage.reserved_bytes
      if (upload.size > room) throw quotaExceeded({ room: Math.max(0, room), quota: reservation.quota })
      const row = await insertMedia(trx, reservation.owner_id, upload)
      await trx.deleteFrom('media_upload').where('id', '=', reservation.id).execute()
      return row
    })
  } catch (err) {
    await storage.remove(upload.storage_key)
    throw err
  }
}

const MY_MEDIA_SORT = { created_at: 'created_at', size: 'size' }
const myMediaList = compiledList((db, v: { owner_id: string }) => db.selectFrom('media').selectAll().where('owner_id', '=', v.owner_id))

/** A page of the owner's own media, newest first by default, with what they take against the quota. */
export async function listMyMedia (db: Db, ownerId: string, query: MyMediaListQuery, page: Page): Promise<{ rows: MediaRow[]; usage: MediaUsage }> {
  const sort = parseSort(query.sort, MY_MEDIA_SORT, [{ column: 'created_at', direction: 'desc' }], 'id')
  const usage = mediaUsage(db, ownerId)
  const { rows } = await myMediaList.page(db, { owner_id: ownerId }, sort, page, async () => (await usage).files)
  return { rows, usage: await usage }
}

const mediaById = cachedRowStatement((db, id: string) => db.selectFrom('media').selectAll().where('id', '=', id))

export async function getMedia (db: Db, id: string): Promise<MediaRow> {
  const row = await mediaById(db, id)
  if (!row) throw new AppError('MediaNotFound', `no media with id ${id}`)
  return row
}

/**
 * Deletes one of the owner's media (another's: 403 UserNotOwner; none: 404 MediaNotFound), in one
 * transaction under the owner's row lock, the lock uploads count the quota under: the row goes, so
 * its bytes stop counting against the quota at once; the owner's own references to its URL (the
 * profile's avatar_url, their posts' media_url) are cleared; then the bytes leave storage, last,
 * so a storage failure rolls everything back. Two deletes at once take turns: the second finds no
 * row (404) and frees nothing. `guard` runs against the row as it is: who may delete it (the
 * route's owner rule and If-Match). Exported for whatever else ends an owner's media (account deletion).
 */
export async function deleteMedia (
  db: Db,
  storage: MediaStorage,
  ownerId: string,
  mediaId: string,
  guard: (current: MediaRow) => void
): Promise<void> {
  await db.transaction().execute(async trx => {
    await lockOwner(trx, ownerId)
    const row = await trx.selectFrom('media').selectAll().where('id', '=', mediaId).executeTakeFirst()
    if (!row) throw new AppError('MediaNotFound', `no media with id ${mediaId}`)
    guard(row)
    await trx.deleteFrom('media').where('id', '=', mediaId).execute()
    const urls = urlPatterns(mediaId)
    await trx
      .updateTable('profile')
      .set({ avatar_url: null })
      .where('id', '=', ownerId)
      .where(eb => eb.or(urls.map(url => eb('avatar_url', 'like', url))))
      .execute()
    await trx
      .updateTable('post')
      .set({ media_url: null })
      .where('creator_id', '=', ownerId)
      .where(eb => eb.or(urls.map(url => eb('media_url', 'like', url))))
      .execute()
    await storage.remove(row.storage_key)
  })
}

/** LIKE patterns of a URL that serves this media, on any allowed host: a path ending in /v1/media/{id}, perhaps a query or fragment. */
function urlPatterns (mediaId: string): string[] {
  const path = `%/v1/media/${mediaId}`
  return [path, `${path}?%`, `${path}#%`]
}

/** The row as the API shows it; `url` is on the public media host, with no file extension. */
export function toMedia (row: MediaRow, mediaPublicUrl: string): Media {
  return {
    id: row.id,
    url: `${mediaPublicUrl}/v1/media/${row.id}`,
    content_type: row.content_type,
    size: Number(row.size),
    sha256: row.sha256,
    created_at: formatDateTime(row.created_at)
  }
}

/** The strong ETag of the bytes (not of the JSON metadata, which has its own). */
export function bytesEtag (row: MediaRow): string {
  return `"sha256-${row.sha256}"`
}

/**
 * The byte range to send for a `Range` header (RFC 9110 §14): null means the whole file.
 * Only one range is served; several ranges, a malformed header or an `If-Range` that names
 * another ETag get the whole file, which the RFC allows. A range wholly past the end is 416;
 * a suffix longer than the file (`bytes=-999999`) is the whole file, as a 206.
 */
export function pickRange (size: number, header: string | undefined, ifRange: string | undefined, etag: string): ByteRange | null {
  if (header === undefined) return null
  if (ifRange !== undefined && ifRange.trim() !== etag) return null
  const { clamped, suffix } = clampSuffixes(size, header)
  // An empty file has no bytes for a suffix to name; RFC 9110 counts it satisfiable: the whole (empty) file.
  if (suffix && size === 0) return null
  const ranges = parseRange(size, clamped, { combine: true })
  if (ranges === -1) {
    throw new AppError('RangeNotSatisfiable', `the file has ${size} bytes`, { headers: { 'content-range': `bytes */${size}` } })
  }
  if (ranges === -2 || ranges.type !== 'bytes' || ranges.length !== 1) return null
  return ranges[0]
}

/**
 * RFC 9110 §14.1.2: a suffix-range longer than the file selects all of it. range-parser calls
 * it unsatisfiable (its start goes negative), so such suffixes are cut to the file's size first.
 */
function clampSuffixes (size: number, header: string): { clamped: string; suffix: boolean } {
  const eq = header.indexOf('=')
  if (eq === -1) return { clamped: header, suffix: false }
  let suffix = false
  const specs = header
    .slice(eq + 1)
    .split(',')
    .map(spec => {
      const m = /^\s*-\s*(\d+)\s*$/.exec(spec)
      if (!m || /^0+$/.test(m[1])) return spec
      suffix = true
      return Number(m[1]) > size ? `-${size}` : spec
    })
  return { clamped: `${header.slice(0, eq + 1)}${specs.join(',')}`, suffix }
}
