import { hostPort, isPrivateAddress, isSupplierHost } from './media-address.js';

describe('isPrivateAddress', () => {
  it('refuses private, loopback, link-local and unusable addresses, IPv4 and IPv6', () => {
    for (const a of [
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '127.0.0.1',
      '127.9.9.9',
      '169.254.169.254',
      '0.0.0.0',
      '100.64.0.1',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12::3',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      'not an address',
    ]) {
      expect([a, isPrivateAddress(a)]).toEqual([a, true]);
    }
  });

  it('accepts public addresses', () => {
    for (const a of ['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect([a, isPrivateAddress(a)]).toEqual([a, false]);
    }
  });
});

describe('isSupplierHost', () => {
  it('is the same host and port, the port made explicit by the scheme', () => {
    const supplier = new URL('http://127.0.0.1:8080/api/v1/upstream');
    expect(isSupplierHost(new URL('http://127.0.0.1:8080/uploads/a.png'), supplier)).toBe(true);
    expect(isSupplierHost(new URL('http://127.0.0.1:8081/a.png'), supplier)).toBe(false);
    expect(isSupplierHost(new URL('http://localhost:8080/a.png'), supplier)).toBe(false);
    expect(hostPort(new URL('https://Shop.Example/a.png'))).toBe('shop.example:443');
    expect(isSupplierHost(new URL('http://shop.example/a.png'), new URL('http://shop.example:80/api'))).toBe(true);
  });
});
