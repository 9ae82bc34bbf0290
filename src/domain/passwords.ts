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

/**
 * scrypt with N = 2^cost, r=8, p=1: cost 15 (32 MiB a hash) is the OWASP minimum and the default
 * (PASSWORD_HASH_COST). The parameters travel with each hash, so any stored hash verifies whatever
 * the setting is now; a new cost applies to passwords set from then on.
 */
const R = 8
const KEYLEN = 32
// Twice what cost 17 (the setting's highest, plugins/config.ts) needs: a stored hash asking more fails, it allocates nothing.
const MAXMEM = 2 * 128 * 2 ** 17 * R

/** `scrypt$N$r$p$salt$hash`, all base64url. */
export async function hashPassword (password: string, cost: number): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(password, salt, KEYLEN, { N: 2 ** cost, r: R, p: 1, maxmem: MAXMEM })
  return ['scrypt', 2 ** cost, R, 1, salt.toString('base64url'), key.toString('base64url')].join('$')
}

export async function verifyPassword (password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$')
  if (kind !== 'scrypt') return false
  const expected = Buffer.from(hash, 'base64url')
  const key = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p), maxmem: MAXMEM })
  return timingSafeEqual(key, expected)
}

/** A hash at this cost that matches no password, so an unknown username costs what a wrong password does. */
export const dummyHash = (cost: number) => `scrypt$${2 ** cost}$${R}$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`
