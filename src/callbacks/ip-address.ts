// Which IP addresses a webhook may be delivered to: public unicast only. Everything a
// server-side request could use to reach our own network (loopback, private, link-local,
// unique-local, CGNAT, ...) or that is not a real destination (unspecified, multicast,
// documentation, reserved) is refused. Own parser instead of net.BlockList: a BlockList
// holding an IPv6 rule for ::ffff:0:0/96 also matches every plain IPv4 address.
import net from 'node:net';

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

type Range = readonly [prefix: string, length: number, reason: string];

const IPV4_RANGES: readonly Range[] = [
  ['0.0.0.0', 8, 'an unspecified ("this network") address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (carrier-grade NAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol assignment address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a 6to4 relay anycast address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved or broadcast address'],
];

const IPV6_RANGES: readonly Range[] = [
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['::ffff:0:0', 96, 'an IPv4-mapped IPv6 address'],
  ['::', 96, 'an IPv4-compatible IPv6 address'],
  ['64:ff9b:1::', 48, 'a local-use NAT64 address'],
  ['100::', 64, 'a discard-only address'],
  ['2001::', 32, 'a Teredo tunnelling address'],
  ['2001:2::', 48, 'a benchmarking address'],
  ['2001:db8::', 32, 'a documentation address'],
  ['3fff::', 20, 'a documentation address'],
  ['fc00::', 7, 'a unique-local address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
];

/** Prefixes that embed an IPv4 address, which then decides: [prefix, length, bit offset of the IPv4]. */
const IPV6_EMBEDDING_IPV4: ReadonlyArray<readonly [string, number, number, string]> = [
  ['64:ff9b::', 96, 96, 'NAT64'],
  ['2002::', 16, 16, '6to4'],
];

function parseIPv4(text: string): bigint {
  return text.split('.').reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

function parseIPv6(text: string): bigint {
  let address = text.split('%')[0];
  const lastColon = address.lastIndexOf(':');
  const tail = address.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIPv4(tail);
    address = `${address.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = address.split('::') as [string, string | undefined];
  const words = (part: string) => (part === '' ? [] : part.split(':'));
  const left = words(head);
  const right = rest === undefined ? [] : words(rest);
  const all = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return all.reduce((value, word) => (value << 16n) | BigInt(Number.parseInt(word, 16)), 0n);
}

function inRange(value: bigint, bits: number, prefix: bigint, length: number): boolean {
  const shift = BigInt(bits - length);
  return value >> shift === prefix >> shift;
}

function classifyIPv4(value: bigint): AddressVerdict {
  for (const [prefix, length, reason] of IPV4_RANGES) {
    if (inRange(value, 32, parseIPv4(prefix), length)) return { allowed: false, reason };
  }
  return { allowed: true };
}

function formatIPv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

/** Classifies an IPv4 or IPv6 address (IPv6 may carry a `%zone`). Anything unparsable is refused. */
export function classifyAddress(address: string): AddressVerdict {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = net.isIP(bare.split('%')[0]);
  if (family === 4) return classifyIPv4(parseIPv4(bare));
  if (family !== 6) return { allowed: false, reason: 'not an IP address' };

  const value = parseIPv6(bare);
  for (const [prefix, length, reason] of IPV6_RANGES) {
    if (inRange(value, 128, parseIPv6(prefix), length)) return { allowed: false, reason };
  }
  for (const [prefix, length, offset, name] of IPV6_EMBEDDING_IPV4) {
    if (!inRange(value, 128, parseIPv6(prefix), length)) continue;
    const embedded = (value >> BigInt(128 - offset - 32)) & 0xffffffffn;
    const verdict = classifyIPv4(embedded);
    return verdict.allowed ? verdict : { allowed: false, reason: `a ${name} address of ${formatIPv4(embedded)}, ${verdict.reason}` };
  }
  // Only 2000::/3 is allocated as global unicast.
  if (!inRange(value, 128, 0x2n << 124n, 3)) return { allowed: false, reason: 'a reserved IPv6 address (not global unicast)' };
  return { allowed: true };
}
