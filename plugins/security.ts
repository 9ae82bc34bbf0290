import { BlockList, isIP, isIPv4 } from 'node:net'
import type { Socket } from 'node:net'
import cors from '@fastify/cors'
import helmet from 'helmet'
import fp from 'fastify-plugin'
import { AppError } from '../schemas/problems.js'
import { canonicalIp, clientKey } from './client-identity.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** a page opened from a mailed link, which carries its one-time token in the query */
    linkToken?: boolean
  }
}

const TOKEN_PARAMS = new Set(['access_token', 'token'])

// A run of base64url parts joined by dots (written plainly or percent-encoded). Each run is
// matched once from its first character (the look-behind), so the cost stays linear in the URL.
const DOTTED_RUN = /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]+(?:(?:\.|%2[Ee])[A-Za-z0-9_-]*)+/g
const DOT = /\.|%2[Ee]/g

/**
 * A run holding a JWT, or the payload and signature of one (a base64url JSON part, `eyJ` for `{"`,
 * then at least one more part), loses it from that part on.
 */
function redactJwt (run: string): string {
  const at = run.indexOf('eyJ')
  if (at === -1) return run
  const rest = run.slice(at)
  const dot = rest.search(DOT)
  return dot !== -1 && dot + 1 < rest.length && rest.slice(dot).replace(DOT, '') !== '' ? `${run.slice(0, at)}[redacted]` : run
}

/** Percent-escapes decoded byte by byte: `ey%4A…` is the token `eyJ…` to a server that reads it. */
function decodeEscapes (url: string): string {
  return url.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
}

/**
 * The URL as it may be logged: the value of every access_token/token query parameter replaced,
 * matched like the refusal below matches them (decoded, case-insensitive), and every JWT-shaped
 * string anywhere else too (`?jwt=…`, `?access_token[]=…`, a token sent as a path id).
 */
export function redactTokens (url: string): string {
  const query = url.indexOf('?')
  let out = url
  if (query !== -1 && hasTokenParam(url, query)) {
    const parts = url
      .slice(query + 1)
      .split('&')
      .map(part => (isTokenKey(part) ? `${keyOf(part)}=[redacted]` : part))
    out = `${url.slice(0, query)}?${parts.join('&')}`
  }
  // JWT-shaped runs are looked for in the decoded URL; where one is found, the decoded URL is logged.
  const decoded = out.includes('%') ? decodeEscapes(out) : out
  if (!decoded.includes('eyJ')) return out
  const redacted = decoded.replace(DOTTED_RUN, redactJwt)
  return redacted === decoded ? out : redacted
}

/** Does the query (from the `?` at `query`) name an access_token/token parameter? */
function hasTokenParam (url: string, query: number): boolean {
  for (let start = query + 1; start <= url.length;) {
    const end = url.indexOf('&', start)
    if (isTokenKey(url.slice(start, end === -1 ? url.length : end))) return true
    if (end === -1) break
    start = end + 1
  }
  return false
}

const keyOf = (part: string) => {
  const eq = part.indexOf('=')
  return eq === -1 ? part : part.slice(0, eq)
}

/**
 * One `name=value` part of a query: is its name, decoded as URLSearchParams decodes it, a token
 * parameter? Only a name with `%`, `+` or `?` can decode to another, so only those are decoded.
 */
function isTokenKey (part: string): boolean {
  const raw = keyOf(part)
  const key = /[%+?]/.test(raw) ? (new URLSearchParams(`${raw}=`).keys().next().value ?? '') : raw
  return TOKEN_PARAMS.has(key.trim().toLowerCase())
}

// proxy-addr's range names, as subnets.
const RANGES: Record<string, Array<[string, number]>> = {
  loopback: [
    ['127.0.0.0', 8],
    ['::1', 128]
  ],
  linklocal: [
    ['169.254.0.0', 16],
    ['fe80::', 10]
  ],
  uniquelocal: [
    ['10.0.0.0', 8],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
    ['fc00::', 7]
  ]
}

/** The TRUST_PROXY list as a matcher of peer addresses. */
export function trustedProxies (entries: readonly string[]): BlockList {
  const list = new BlockList()
  for (const entry of entries) {
    for (const [address, prefix] of RANGES[entry] ?? [cidr(entry)]) list.addSubnet(address, prefix, isIPv4(address) ? 'ipv4' : 'ipv6')
  }
  return list
}

/**
 * TRUST_PROXY as Fastify's trust function: the same matcher, its answer remembered per address,
 * since Fastify parses the peer again on every read of `request.ip` and `request.protocol`.
 */
export function trustFunction (entries: readonly string[]): (address: string, hop: number) => boolean {
  const list = trustedProxies(entries)
  const known = new Map<string, boolean>()
  return address => {
    let trusted = known.get(address)
    if (trusted === undefined) {
      const family = isIP(address)
      trusted = family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6')
      // X-Forwarded-For entries are written by clients: the memory stays bounded.
      if (known.size >= 1024) known.clear()
      known.set(address, trusted)
    }
    return trusted
  }
}

function cidr (entry: string): [string, number] {
  const [address, prefix] = entry.split('/')
  return [address, prefix === undefined ? (isIPv4(address) ? 32 : 128) : Number(prefix)]
}

/**
 * At most `max` open connections per client (clientKey: an IPv6 client by its network): one
 * client cannot hold every socket (slowloris). The trusted proxies are exempt, as they carry
 * everyone's connections.
 */
export function capConnectionsPerPeer (
  server: { on: (event: 'connection', listener: (socket: Socket) => void) => unknown },
  max: number,
  exempt: BlockList,
  ipv6Prefix: number
) {
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress
    if (address === undefined) return
    const ip = canonicalIp(address) ?? address
    if (exempt.check(ip, isIPv4(ip) ? 'ipv4' : 'ipv6')) return
    const peer = clientKey(ip, ipv6Prefix)
    const count = (open.get(peer) ?? 0) + 1
    if (count > max) {
      socket.destroy()
      return
    }
    open.set(peer, count)
    socket.once('close', () => {
      const left = (open.get(peer) ?? 1) - 1
      if (left === 0) open.delete(peer)
      else open.set(peer, left)
    })
  })
}

/**
 * Transport policy: security headers, CORS from ALLOWED_CORS_ORIGINS, no token in a URL,
 * and HTTPS in production (TLS here, or a trusted proxy that says the client spoke https).
 */
export default fp(
  async fastify => {
    const { config } = fastify
    const httpsDirect = Boolean(config.TLS_CERT_FILE)
    capConnectionsPerPeer(
      fastify.server,
      config.MAX_CONNECTIONS_PER_IP,
      trustedProxies(Array.isArray(config.trustProxy) ? config.trustProxy : []),
      config.RATE_LIMIT_IPV6_PREFIX
    )

    const secure = helmet({
      // The API serves JSON and the docs page only; the docs UI needs inline styles and scripts.
      contentSecurityPolicy: false,
      hsts: config.production ? { maxAge: 31536000, includeSubDomains: true } : false
    })
    // Helmet run on each request, the plain way: its headers worked out once answered `/version` only 1.06× as fast,
    // under the 10 % a speed device must earn.
    fastify.addHook('onRequest', (request, reply, done) => secure(request.raw, reply.raw, done as (err?: unknown) => void))

    const wildcard = config.corsOrigins.includes('*')
    await fastify.register(cors, {
      origin: wildcard ? '*' : config.corsOrigins.length > 0 ? config.corsOrigins : false,
      // Bearer tokens travel in a header, never in cookies; credentials are never allowed, above all with `*`.
      credentials: false,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['authorization', 'content-type', 'if-match', 'if-none-match', 'idempotency-key', 'accept', 'range'],
      exposedHeaders: ['location', 'etag', 'link', 'retry-after', 'deprecation', 'sunset'],
      maxAge: 600
    })

    // A plain (not async) hook: no promise per request for a check that never waits.
    fastify.addHook('onRequest', (request, _reply, done) => {
      const query = request.url.indexOf('?')
      if (query !== -1 && request.routeOptions.config?.linkToken !== true && hasTokenParam(request.url, query)) {
        return done(new AppError('TokenInQuery', 'send the token in the Authorization header, never in the URL'))
      }
      if (config.production && !httpsDirect && request.protocol !== 'https') {
        return done(new AppError('HttpsRequired', 'this API is served over HTTPS only'))
      }
      done()
    })
  },
  { name: 'security', dependencies: ['config', 'problems'] }
)
