import { isIP } from 'node:net'

/**
 * Who a client is, for every limit that counts clients (the rate limits, the password limit, the
 * connection cap): one spelling per address, and one key per IPv6 network of `ipv6Prefix` bits,
 * as one subscriber is routinely given a whole /64 and can send from any address in it.
 *
 * `203.0.113.77`, `::ffff:203.0.113.77`, `::ffff:cb00:714d` and `0:0:0:0:0:ffff:cb00:714d` are one
 * client (`203.0.113.77`); `2001:db8:1:2::1` and `2001:DB8:1:2:0:0:0:12` are one (`2001:db8:1:2::/64`).
 * Anything that is not an address (a unix socket, a test's made-up peer) is its own key.
 */
export function clientKey (address: string, ipv6Prefix = 64): string {
  const canonical = canonicalAddress(address)
  if (canonical === undefined) return address
  if (typeof canonical === 'string') return canonical
  if (ipv6Prefix >= 128) return formatIPv6(canonical)
  return `${formatIPv6(mask(canonical, ipv6Prefix))}/${ipv6Prefix}`
}

/**
 * An address in its one spelling: IPv4 (also when written as an IPv4-mapped IPv6 address)
 * as dotted decimal, IPv6 in the RFC 5952 form. Undefined when it is not an address.
 */
export function canonicalIp (address: string): string | undefined {
  const canonical = canonicalAddress(address)
  return typeof canonical === 'object' ? formatIPv6(canonical) : canonical
}

/** The eight 16-bit groups of an IPv6 address as written (no IPv4 mapping undone), or undefined. */
export function ipv6Groups (address: string): number[] | undefined {
  return isIP(address) === 6 && !address.includes('%') ? parseIPv6(address) : undefined
}

/** The groups with all but the first `prefix` bits cleared. */
export function mask (groups: readonly number[], prefix: number): number[] {
  return groups.map((group, i) => {
    const bits = Math.min(16, Math.max(0, prefix - i * 16))
    return bits === 0 ? 0 : group & (0xffff << (16 - bits)) & 0xffff
  })
}

/** IPv4 as its dotted text, IPv6 as its eight 16-bit groups, or undefined. */
function canonicalAddress (address: string): string | number[] | undefined {
  // A zone (fe80::1%eth0) names the interface, not another client.
  const zone = address.indexOf('%')
  const bare = zone === -1 ? address : address.slice(0, zone)
  const family = isIP(bare)
  if (family === 4) return bare
  if (family !== 6) return undefined
  const groups = parseIPv6(bare)
  // ::ffff:0:0/96 is IPv4 seen through a dual-stack socket or written by a proxy: the same client.
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff) {
    return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`
  }
  return groups
}

/** The eight groups of an address isIP already accepted as IPv6 (`::`, a dotted IPv4 tail). */
function parseIPv6 (address: string): number[] {
  let text = address.toLowerCase()
  const tail: number[] = []
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number)
    tail.push((a << 8) | b, (c << 8) | d)
    text = text.slice(0, dotted.index)
    // `::1.2.3.4` leaves `::`, `1::1.2.3.4` leaves `1::`, `1:2:3:4:5:6:1.2.3.4` leaves `1:2:3:4:5:6:`
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1)
  }
  const double = text.indexOf('::')
  const words = (part: string) => part === '' ? [] : part.split(':').map(w => parseInt(w, 16))
  const head = words(double === -1 ? text : text.slice(0, double))
  const rest = double === -1 ? [] : words(text.slice(double + 2))
  const zeros = 8 - tail.length - head.length - rest.length
  return [...head, ...new Array<number>(double === -1 ? 0 : zeros).fill(0), ...rest, ...tail]
}

/** RFC 5952: lower-case hex, no leading zeros, the longest run (two or more) of zero groups as `::`. */
function formatIPv6 (groups: number[]): string {
  let best = -1
  let bestLength = 1
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLength) { best = i; bestLength = j - i }
    i = j
  }
  const hex = groups.map(g => g.toString(16))
  if (best === -1) return hex.join(':')
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLength).join(':')}`
}
