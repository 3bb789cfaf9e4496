import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyAddress } from '../../src/callbacks/ip-address.ts';

const refused = (address: string, reason: RegExp) => {
  const verdict = classifyAddress(address);
  assert.equal(verdict.allowed, false, address);
  assert.match(!verdict.allowed ? verdict.reason : '', reason, address);
};

test('public IPv4 and IPv6 addresses are allowed', () => {
  for (const address of [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ]) {
    assert.deepEqual(classifyAddress(address), { allowed: true }, address);
  }
});

test('IPv4 loopback, private, link-local, CGNAT, unspecified, multicast, reserved are refused', () => {
  refused('127.0.0.1', /loopback/);
  refused('127.255.255.254', /loopback/);
  refused('10.1.2.3', /private/);
  refused('172.16.0.1', /private/);
  refused('172.31.255.255', /private/);
  refused('192.168.1.1', /private/);
  refused('169.254.169.254', /link-local/);
  refused('100.64.0.1', /carrier-grade NAT/);
  refused('100.127.255.255', /carrier-grade NAT/);
  refused('0.0.0.0', /unspecified/);
  refused('224.0.0.1', /multicast/);
  refused('239.255.255.250', /multicast/);
  refused('255.255.255.255', /broadcast/);
  refused('240.0.0.1', /reserved/);
  refused('192.0.2.10', /documentation/);
  refused('198.18.0.1', /benchmarking/);
});

test('IPv6 loopback, unspecified, unique-local, link-local, multicast, mapped are refused', () => {
  refused('::1', /loopback/);
  refused('[::1]', /loopback/);
  refused('0:0:0:0:0:0:0:1', /loopback/);
  refused('::', /unspecified/);
  refused('fd12:3456:789a::1', /unique-local/);
  refused('fc00::1', /unique-local/);
  refused('fe80::1', /link-local/);
  refused('fe80::1%eth0', /link-local/);
  refused('FE80::ABCD', /link-local/);
  refused('ff02::1', /multicast/);
  refused('::ffff:127.0.0.1', /IPv4-mapped/);
  refused('::ffff:8.8.8.8', /IPv4-mapped/);
  refused('::ffff:7f00:1', /IPv4-mapped/);
  refused('::127.0.0.1', /IPv4-compatible/);
  refused('2001:db8::1', /documentation/);
  refused('2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/);
  refused('fec0::1', /site-local/);
  refused('4000::1', /not global unicast/);
});

test('IPv6 forms that embed an IPv4 address are judged by it', () => {
  refused('64:ff9b::7f00:1', /NAT64 address of 127\.0\.0\.1, a loopback/);
  refused('64:ff9b::10.0.0.1', /NAT64 address of 10\.0\.0\.1, a private/);
  refused('2002:c0a8:101::1', /6to4 address of 192\.168\.1\.1, a private/);
  refused('64:ff9b:1::1', /local-use NAT64/);
});

test('anything that is not an IP address is refused', () => {
  refused('localhost', /not an IP address/);
  refused('1.2.3', /not an IP address/);
  refused('', /not an IP address/);
});
