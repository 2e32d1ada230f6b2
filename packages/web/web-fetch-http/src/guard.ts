// The address guard: which IP addresses a fetch may connect to. Refused by default: loopback,
// private (RFC 1918, unique-local), link-local, carrier-grade NAT, unspecified, multicast,
// reserved and documentation ranges, including IPv4 addresses embedded in IPv6 forms
// (IPv4-mapped, IPv4-compatible, NAT64, 6to4). The guard sees resolved addresses, never names.
import { BlockList, isIP } from 'node:net'

interface Range {
  cidr: string
  kind: string
}

const V4: Range[] = [
  { cidr: '0.0.0.0/8', kind: 'unspecified' },
  { cidr: '10.0.0.0/8', kind: 'private' },
  { cidr: '100.64.0.0/10', kind: 'carrier-grade NAT' },
  { cidr: '127.0.0.0/8', kind: 'loopback' },
  { cidr: '169.254.0.0/16', kind: 'link-local' },
  { cidr: '172.16.0.0/12', kind: 'private' },
  { cidr: '192.0.0.0/24', kind: 'reserved' },
  { cidr: '192.0.2.0/24', kind: 'documentation' },
  { cidr: '192.168.0.0/16', kind: 'private' },
  { cidr: '198.18.0.0/15', kind: 'benchmarking' },
  { cidr: '198.51.100.0/24', kind: 'documentation' },
  { cidr: '203.0.113.0/24', kind: 'documentation' },
  { cidr: '224.0.0.0/4', kind: 'multicast' },
  { cidr: '240.0.0.0/4', kind: 'reserved' },
]

const V6: Range[] = [
  { cidr: '::/128', kind: 'unspecified' },
  { cidr: '::1/128', kind: 'loopback' },
  { cidr: 'fc00::/7', kind: 'private' },
  { cidr: 'fe80::/10', kind: 'link-local' },
  { cidr: 'fec0::/10', kind: 'site-local' },
  { cidr: 'ff00::/8', kind: 'multicast' },
  { cidr: '2001:db8::/32', kind: 'documentation' },
]

function cidrList(ranges: string[]): BlockList {
  const list = new BlockList()
  for (const cidr of ranges) {
    const [net, bits] = cidr.split('/')
    const type = isIP(net) === 6 ? 'ipv6' : 'ipv4'
    list.addSubnet(net, Number(bits), type)
  }
  return list
}

/** Checks a CIDR string (`a.b.c.d/n` or `v6::/n`); returns a problem sentence or undefined. */
export function checkCidr(cidr: string): string | undefined {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(cidr)
  if (!match) return `${JSON.stringify(cidr)} is not a CIDR range (write it as 127.0.0.1/32 or ::1/128)`
  const family = isIP(match[1])
  if (family === 0) return `${JSON.stringify(cidr)} does not start with an IP address`
  const bits = Number(match[2])
  if (bits > (family === 4 ? 32 : 128)) return `${JSON.stringify(cidr)} has a prefix longer than the address`
  return undefined
}

/** Expands an IPv6 address into its eight 16-bit groups. */
function groups6(address: string): number[] {
  let text = address.toLowerCase()
  const zone = text.indexOf('%')
  if (zone >= 0) text = text.slice(0, zone)
  // A trailing dotted quad counts as two groups.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (quad) {
    const [a, b, c, d] = quad[1].split('.').map(Number)
    text = text.slice(0, -quad[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined]
  const left = head ? head.split(':') : []
  const right = tail !== undefined && tail !== '' ? tail.split(':') : []
  const fill = tail === undefined ? [] : new Array(8 - left.length - right.length).fill('0')
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16))
}

const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`

/** The IPv4 address carried inside an IPv6 address (mapped, compatible, NAT64, 6to4), if any. */
export function embeddedV4(address: string): string | undefined {
  const g = groups6(address)
  if (g.length !== 8 || g.some((n) => Number.isNaN(n))) return undefined
  const zero = (from: number, to: number) => g.slice(from, to).every((n) => n === 0)
  if (zero(0, 5) && g[5] === 0xffff) return quad(g[6], g[7]) // ::ffff:a.b.c.d
  if (zero(0, 6) && (g[6] !== 0 || g[7] > 1)) return quad(g[6], g[7]) // ::a.b.c.d (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return quad(g[6], g[7]) // 64:ff9b::/96
  if (g[0] === 0x2002) return quad(g[1], g[2]) // 6to4
  return undefined
}

export interface AddressGuardOptions {
  /** Allow every address (the guard is off). */
  allowPrivateNetwork: boolean
  /** CIDR ranges allowed even though a refused range contains them. */
  allowedRanges: string[]
}

export class AddressGuard {
  // Built on the first check, not at boot: Node compiles its IPv6 pattern on first use (~5-10 ms).
  private lists?: {
    v4: Array<{ kind: string; list: BlockList }>
    v6: Array<{ kind: string; list: BlockList }>
    allowed: BlockList
  }

  constructor(readonly options: AddressGuardOptions) {}

  private get v4() {
    return (this.lists ??= this.build()).v4
  }

  private get v6() {
    return (this.lists ??= this.build()).v6
  }

  private get allowed() {
    return (this.lists ??= this.build()).allowed
  }

  private build() {
    return {
      v4: V4.map((r) => ({ kind: r.kind, list: cidrList([r.cidr]) })),
      v6: V6.map((r) => ({ kind: r.kind, list: cidrList([r.cidr]) })),
      allowed: cidrList(this.options.allowedRanges),
    }
  }

  /** Why `address` is refused ("loopback", "private", ...), or undefined when it may be used. */
  refusal(address: string): string | undefined {
    if (this.options.allowPrivateNetwork) return undefined
    const family = isIP(address)
    if (family === 0) return 'not an IP address'
    const type = family === 4 ? 'ipv4' : 'ipv6'
    if (this.allowed.check(address, type)) return undefined
    if (family === 4) return this.v4.find((r) => r.list.check(address, 'ipv4'))?.kind
    const inner = embeddedV4(address)
    if (inner !== undefined) {
      if (this.allowed.check(inner, 'ipv4')) return undefined
      const kind = this.v4.find((r) => r.list.check(inner, 'ipv4'))?.kind
      if (kind) return `${kind} (IPv4 ${inner} inside IPv6)`
    }
    return this.v6.find((r) => r.list.check(address, 'ipv6'))?.kind
  }
}
