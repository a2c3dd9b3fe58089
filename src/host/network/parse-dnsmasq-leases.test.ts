import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDnsmasqLeases } from './parse-dnsmasq-leases.ts';

const LEASES = `1718000000 00:16:3e:aa:bb:01 10.55.12.23 c1 01:00:16:3e:aa:bb:01
1718000100 00:16:3E:AA:BB:02 10.55.12.24 * *
0 00:16:3e:aa:bb:03 10.55.12.2 c3 *
duid 00:01:00:01:2d:00:00:01:00:16:3e:00:00:01
1718000200 1045462 fd42:1::5 c1 00:01:00:01:2d:11:22:33:00:16:3e:aa:bb:01
1718000300 77 fd42:1::6 * 00:04:ab:cd
garbage line
`;

test('parseDnsmasqLeases: IPv4 and IPv6 lines, the duid line skipped, `*` is no name', () => {
  assert.deepEqual(parseDnsmasqLeases(LEASES), [
    { hostname: 'c1', hwaddr: '00:16:3e:aa:bb:01', address: '10.55.12.23', type: 'dynamic', location: 'none' },
    { hostname: '', hwaddr: '00:16:3e:aa:bb:02', address: '10.55.12.24', type: 'dynamic', location: 'none' },
    { hostname: 'c3', hwaddr: '00:16:3e:aa:bb:03', address: '10.55.12.2', type: 'dynamic', location: 'none' },
    { hostname: 'c1', hwaddr: '00:16:3e:aa:bb:01', address: 'fd42:1::5', type: 'dynamic', location: 'none' },
    { hostname: '', hwaddr: '', address: 'fd42:1::6', type: 'dynamic', location: 'none' },
  ]);
});

test('parseDnsmasqLeases: an empty file is no lease', () => {
  assert.deepEqual(parseDnsmasqLeases(''), []);
});
