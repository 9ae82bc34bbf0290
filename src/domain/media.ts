import { randomUUID } from 'node:crypto'
import { cachedRowStatement } from '../db/statement-cache.js'
import type { Readable } from 'node:stream'
import parseRange from 'range-parser'
import type { Selectable } from 'kysely'
import { AppError } from '../../schemas/problems.js'
import type { ByteRange, MediaStorage } from './storage.js'
import type { Media } from '../../schemas/media.js'
import type { Db } from '../db/dialect.js'
import type { MediaTable } from '../db/schema.js'
import { formatDateTime } from '../db/date-time-format.js'
import { writeTimeIso } from '../db/clock.js'

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
 * Streams an upload into storage under a new server-made key, keeping only its first bytes
 * to sniff the media type. Storage leaves nothing behind when the stream fails.
 */
export async function storeUpload (storage: MediaStorage, file: Readable): Promise<StoredUpload> {
  const id = randomUUID()
  const head: Buffer[] = []
  let headLength = 0
  async function * keepHead (chunks: AsyncIterable<Buffer>) {
    for await (const chunk of chunks) {
      if (headLength < SNIFF_BYTES) {
        head.push(chunk.subarray(0, SNIFF_BYTES - headLength))
        headLength += Math.min(chunk.length, SNIFF_BYTES - headLength)
      }
      yield chunk
    }
  }
  const stored = await storage.put(id, keepHead(file))
  const content_type = await sniff(Buffer.concat(head), stored.size)
  return { id, storage_key: id, ...stored, content_type }
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
const ACTIVE = /^(?:text\/(?:html|xml|javascript|ecmascript)|application\/(?:xml|xhtml\+xml|javascript|ecmascript|x-shockwave-flash)|[a-z]+\/[^;\s]+\+xml)$/i

/** Would a browser run or render it as a document? Such uploads are stored and served as text/plain. */
export function isActiveContent (mediaType: string): boolean {
  return ACTIVE.test(mediaType.split(';')[0].trim())
}

// Control characters that plain text does not contain (tab, line feed, form feed, carriage return are fine).
const CONTROL = /[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f]/ // eslint-disable-line no-control-regex

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

export async function insertMedia (db: Db, ownerId: string, upload: StoredUpload): Promise<MediaRow> {
  const row = { ...upload, owner_id: ownerId, created_at: writeTimeIso() }
  await db.insertInto('media').values(row).execute()
  return row
}

/**
 * Stores an upload and records it. A row exists only for a file that is complete on disk;
 * a file whose row could not be written is removed.
 */
export async function createMedia (db: Db, storage: MediaStorage, ownerId: string, upload: StoredUpload): Promise<MediaRow> {
  try {
    return await insertMedia(db, ownerId, upload)
  } catch (err) {
    await storage.remove(upload.storage_key)
    throw err
  }
}

const mediaById = cachedRowStatement((db, id: string) => db.selectFrom('media').selectAll().where('id', '=', id))

export async function getMedia (db: Db, id: string): Promise<MediaRow> {
  const row = await mediaById(db, id)
  if (!row) throw new AppError('MediaNotFound', `no media with id ${id}`)
  return row
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
function clampSuffixes (size: number, header: string): { clamped: string, suffix: boolean } {
  const eq = header.indexOf('=')
  if (eq === -1) return { clamped: header, suffix: false }
  let suffix = false
  const specs = header.slice(eq + 1).split(',').map(spec => {
    const m = /^\s*-\s*(\d+)\s*$/.exec(spec)
    if (!m || /^0+$/.test(m[1])) return spec
    suffix = true
    return Number(m[1]) > size ? `-${size}` : spec
  })
  return { clamped: `${header.slice(0, eq + 1)}${specs.join(',')}`, suffix }
}
