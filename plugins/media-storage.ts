import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import fp from 'fastify-plugin'
import type { MediaStorage } from '../src/domain/storage.js'

/**
 * Streams move in chunks of at most this size, far under the 50 MiB ceiling on one chunk:
 * memory per upload or download stays flat whatever the file size.
 */
export const CHUNK_BYTES = 1024 * 1024

declare module 'fastify' {
  interface FastifyInstance {
    mediaStorage: MediaStorage
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
 * The local-disk driver: one file per key under `dir`. A write goes to a temporary name
 * in the same folder, is flushed to disk, then renamed into place, so a reader never sees
 * a partial file and a failed write leaves nothing behind.
 */
export function diskStorage (dir: string): MediaStorage {
  const pathOf = (key: string) => join(dir, checkKey(key))

  return {
    async put (key, source, opts = {}) {
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

    async open (key, range) {
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

    async remove (key) {
      await rm(pathOf(key), { force: true })
    }
  }
}

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
