import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import { AppError } from '../../schemas/problems.js'

/**
 * Opaque, tamper-evident keyset cursors: base64url(JSON position) "." base64url(HMAC-SHA256).
 * The key is derived from the JWT secret for this one purpose, so a cursor can never pass as
 * anything else; a forged, altered or malformed cursor is a 422 on query /cursor.
 */
export class Cursors<P extends object> {
  readonly #key: Buffer

  constructor (secret: string, purpose: string, private readonly isPosition: (value: unknown) => value is P) {
    this.#key = Buffer.from(hkdfSync('sha256', secret, 'roja-cursor', purpose, 32))
  }

  encode (position: P): string {
    const payload = Buffer.from(JSON.stringify(position)).toString('base64url')
    return `${payload}.${this.#mac(payload).toString('base64url')}`
  }

  decode (cursor: string): P {
    const [payload, mac, ...rest] = cursor.split('.')
    const given = Buffer.from(mac ?? '', 'base64url')
    const expected = this.#mac(payload ?? '')
    if (rest.length > 0 || !payload || given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid()
    let position: unknown
    try {
      position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    } catch {
      throw invalid()
    }
    if (!this.isPosition(position)) throw invalid()
    return position
  }

  #mac (payload: string): Buffer {
    return createHmac('sha256', this.#key).update(payload).digest()
  }
}

function invalid (): AppError {
  return new AppError('ValidationFailed', 'the cursor is not one this server gave out', {
    errors: [{ in: 'query', field: '/cursor', rule: 'cursor', message: 'must be a next_cursor from a previous page, unchanged' }]
  })
}
