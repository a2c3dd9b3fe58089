import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contains, formatIp, overlaps, parseCidr, parseIp, subnetText } from './ip-cidr.ts';

test('addresses parse to numbers and format back in canonical form', () => {
  assert.deepEqual(parseIp('10.0.3.1'), { family: 4, value: 0x0a000301n });
  assert.equal(parseIp('256.0.0.1'), undefined);
  assert.equal(parseIp('10.0.3'), undefined);
  assert.equal(parseIp('fe80::1%eth0'), undefined);
  assert.deepEqual(parseIp('::1'), { family: 6, value: 1n });
  assert.equal(parseIp('::ffff:10.0.0.1')!.value, 0xffff0a000001n);
  assert.equal(formatIp(4, 0x0a000301n), '10.0.3.1');
  for (const t of ['fd42:1:2:3::1', '::1', '::', 'fe80::', '1:0:0:2::3', '2001:db8:0:1:1:1:1:1'])
    assert.equal(formatIp(6, parseIp(t)!.value), t);
  assert.equal(formatIp(6, parseIp('fd42:0:0:0:0:0:0:1')!.value), 'fd42::1');
});

test('CIDRs: network and last address, containment, overlap', () => {
  const c = parseCidr('10.0.3.7/24')!;
  assert.equal(subnetText(c), '10.0.3.0/24');
  assert.equal(formatIp(4, c.last), '10.0.3.255');
  assert.equal(parseCidr('10.0.3.1/33'), undefined);
  assert.equal(parseCidr('10.0.3.1'), undefined);
  assert.equal(parseCidr('fd42::1/129'), undefined);
  assert.equal(subnetText(parseCidr('fd42:1:2:3::1/64')!), 'fd42:1:2:3::/64');
  assert.ok(contains(c, parseIp('10.0.3.200')!));
  assert.ok(!contains(c, parseIp('10.0.4.1')!));
  assert.ok(!contains(c, parseIp('::1')!));
  assert.ok(overlaps(c, parseCidr('10.0.0.0/16')!));
  assert.ok(overlaps(parseCidr('10.0.0.0/16')!, c));
  assert.ok(!overlaps(c, parseCidr('10.0.4.0/24')!));
  assert.ok(!overlaps(c, parseCidr('fd42::/64')!));
});
