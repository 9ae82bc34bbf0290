import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import fp from 'fastify-plugin'

/**
 * Streams move in chunks of at most this size, far under the 50 MiB ceiling on one chunk:
 * memory per upload or download stays flat whatever the file size.
 */
export const CHUNK_BYTES = 1024 * 1024

declare module 'fastify' {
  interface FastifyInstance {
    mediaStorage: DiskStorage
  }
}

const KEY = /^[a-z0-9][a-z0-9-]{0,127}$/
const TMP_SUFFIX = '.tmp'
// Temporary files this old were left by a process that died mid-upload.
const STALE_TMP_MS = 24 * 3600 * 1000

function checkKey (key: string): string {
  // Defence in depth: keys are server-made UUIDs, so a path separator can never get here.
  if (!KEY.test(key)) throw new Error(`invalid storage key: ${JSON.stringify(key)}`)
  return key
}

/**
 * The local-disk driver of the media rules' storage port: one file per key under `dir`. A write
 * goes to a temporary name in the same folder, is flushed to disk, then renamed into place, so a
 * reader never sees a partial file and a failed write leaves nothing behind.
 */
export function diskStorage (dir: string) {
  const pathOf = (key: string) => join(dir, checkKey(key))

  return {
    /** Stores the stream under `key`, all or nothing; its size and lower-case hex sha256. */
    async put (key: string, source: Readable | AsyncIterable<Buffer>, opts: { signal?: AbortSignal } = {}): Promise<{ size: number, sha256: string }> {
      const target = pathOf(key)
      const tmp = `${target}.${randomBytes(6).toString('hex')}${TMP_SUFFIX}`
      const hash = createHash('sha256')
      let size = 0
      async function * measure (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk)
          size += chunk.length
          yield chunk
        }
      }
      try {
        await pipeline(source, measure,
          createWriteStream(tmp, { flags: 'wx', highWaterMark: CHUNK_BYTES, flush: true }),
          { signal: opts.signal })
        await rename(tmp, target)
      } catch (err) {
        await rm(tmp, { force: true })
        throw err
      }
      return { size, sha256: hash.digest('hex') }
    },

    /** A read stream of the object, or of the inclusive byte range; null when there is none. */
    async open (key: string, range?: { start: number, end: number }): Promise<Readable | null> {
      // Open first, so a missing file is known before any header is sent.
      let handle
      try {
        handle = await open(pathOf(key), 'r')
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
        throw err
      }
      return handle.createReadStream({ highWaterMark: CHUNK_BYTES, ...(range ?? {}) })
    },

    /** No error when the object is already gone. */
    async remove (key: string): Promise<void> {
      await rm(pathOf(key), { force: true })
    }
  }
}

export type DiskStorage = ReturnType<typeof diskStorage>

/** Removes temporary files that a crashed process left behind. */
async function sweepStaleTemporaries (dir: string): Promise<void> {
  const now = Date.now()
  for (const name of await readdir(dir)) {
    if (!name.endsWith(TMP_SUFFIX)) continue
    const path = join(dir, name)
    const info = await stat(path).catch(() => null)
    if (info && now - info.mtimeMs > STALE_TMP_MS) await rm(path, { force: true })
  }
}

/** `fastify.mediaStorage`: the local-disk driver under DATA_DIR/media. */
export default fp(async (fastify) => {
  const dir = join(fastify.config.dataDir, 'media')
  await mkdir(dir, { recursive: true })
  await sweepStaleTemporaries(dir)
  fastify.decorate('mediaStorage', diskStorage(dir))
}, { name: 'media-storage', dependencies: ['config'] })
