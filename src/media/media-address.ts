/**
 * Where an image may be fetched from (pure): an image URL must be http(s), and its address must not be
 * private, loopback or link-local, unless it is the supplier's own host and port (a supplier on a
 * private network serves its own images; nothing else there is the relay's to read).
 */
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
// IPv4: "this network", private, carrier-grade NAT, loopback, link-local, IETF, TEST-NETs, benchmarking,
// multicast and reserved.
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
// IPv6: unspecified, loopback, unique local, link-local, site-local, multicast, documentation.
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** True for an address the relay never fetches an image from (unless it is the supplier's own host). */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const lower = address.toLowerCase();
  // IPv4-mapped (::ffff:a.b.c.d) and the hex form of it: judged as the IPv4 address
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (mapped) return blocked.check(mapped[1], 'ipv4');
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1], 16);
    const lo = parseInt(hex[2], 16);
    return blocked.check(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, 'ipv4');
  }
  return blocked.check(address, 'ipv6');
}

/** `host:port` of a URL, the port made explicit (80/443 by scheme). */
export function hostPort(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.hostname.toLowerCase()}:${port}`;
}

/** The URL's host and port are the supplier's own (`supplier`: its origin or base URL). */
export function isSupplierHost(url: URL, supplier: URL): boolean {
  return hostPort(url) === hostPort(supplier);
}
