import fp from 'fastify-plugin'
import { AppError } from '../schemas/problems.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the route picks its representation from `Accept` itself (GET /v1/media/{mediaId}) */
    negotiatesAccept?: boolean
    /** set at start on routes that answer JSON: their `Accept` must allow it (406 otherwise) */
    answersJson?: boolean
  }
}

// What every JSON route can send: its JSON, and problem details when it fails.
const OFFERS = [
  ['application', 'json'],
  ['application', 'problem+json']
] as const

/**
 * 406 NotAcceptable when `Accept` allows no JSON, on the routes that answer JSON (marked at start by
 * their response schema); the usual headers (none, `*\/*`, `application/json`) pass on one comparison.
 */
export default fp(
  async fastify => {
    fastify.addHook('onRoute', route => {
      if (route.schema?.response && !route.config?.negotiatesAccept) route.config = { ...route.config, answersJson: true }
    })

    fastify.addHook('onRequest', (request, _reply, done) => {
      const accept = request.headers.accept
      if (
        accept === undefined ||
        accept === '*/*' ||
        accept === 'application/json' ||
        accept === '' ||
        !request.routeOptions.config?.answersJson ||
        acceptsJson(accept)
      ) {
        done()
        return
      }
      done(
        new AppError('NotAcceptable', 'this route answers application/json (errors as application/problem+json); the Accept header allows neither')
      )
    })
  },
  { name: 'accept', dependencies: ['problems'] }
)

/**
 * Whether an `Accept` header (RFC 9110 §12.5.1) gives application/json a quality above 0, or names
 * application/problem+json with one. The most specific matching range decides (`application/json;q=0, *\/*`
 * refuses JSON); media-type parameters other than q are not compared, so `application/json; charset=utf-8` matches.
 */
export function acceptsJson (header: string): boolean {
  const specificity = [-1, -1]
  const quality = [0, 0]
  for (const part of header.split(',')) {
    const [range, ...params] = part.split(';')
    const slash = range.indexOf('/')
    if (slash < 0) continue
    const type = range.slice(0, slash).trim().toLowerCase()
    const subtype = range
      .slice(slash + 1)
      .trim()
      .toLowerCase()
    let q = 1
    for (const param of params) {
      const [name, value = ''] = param.split('=')
      if (name.trim().toLowerCase() !== 'q') continue
      const parsed = Number(value.trim())
      if (value.trim() !== '' && Number.isFinite(parsed)) q = Math.min(1, Math.max(0, parsed))
    }
    OFFERS.forEach(([offerType, offerSubtype], i) => {
      const level = type === '*' && subtype === '*' ? 0 : type !== offerType ? -1 : subtype === '*' ? 1 : subtype === offerSubtype ? 2 : -1
      if (level > specificity[i]) {
        specificity[i] = level
        quality[i] = q
      } else if (level === specificity[i] && level >= 0) quality[i] = Math.max(quality[i], q)
    })
  }
  // problem+json counts only when named: `application/json;q=0, *\/*` refuses the JSON a list is
  return quality[0] > 0 || (specificity[1] === 2 && quality[1] > 0)
}
