import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto'
import { promisify } from 'node:util'
import pLimit from 'p-limit'

/**
 * scrypt runs on libuv's thread pool, which file reads and writes share (media downloads and
 * uploads). At most this many hashes run at once, so a login flood always leaves a pool thread
 * for files; the rest wait their turn here, not in the pool's queue ahead of every file read.
 */
export const MAX_CONCURRENT_HASHES = Math.max(1, (Number(process.env.UV_THREADPOOL_SIZE) || 4) - 1)
const hashes = pLimit(MAX_CONCURRENT_HASHES)
const scryptAsync = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number, options: ScryptOptions) => Promise<Buffer>
const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) => hashes(() => scryptAsync(password, salt, keylen, options))

// scrypt N=2^15, r=8, p=1: 32 MiB per hash, the OWASP minimum for a memory-hard KDF.
const PARAMS = { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }
const KEYLEN = 32

/** `scrypt$N$r$p$salt$hash`, all base64url: the parameters travel with the hash. */
export async function hashPassword (password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(password, salt, KEYLEN, PARAMS)
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

export async function verifyPassword (password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$')
  if (kind !== 'scrypt') return false
  const expected = Buffer.from(hash, 'base64url')
  const key = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p), maxmem: PARAMS.maxmem })
  return timingSafeEqual(key, expected)
}

/** A hash that matches no password, so an unknown username costs what a wrong password does. */
export const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
