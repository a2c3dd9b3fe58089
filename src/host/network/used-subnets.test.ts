import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ipv4Network, ipv6Hex, ipv6NetworkOfHex, parseIpv6Routes, usedSubnetsFrom } from './used-subnets.ts';

const ROUTE = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
br0\t000C370A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
`;
const IPV6_ROUTE = `fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000003 00000000 00000003     eth0
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000004 00000000 00000001     eth0
`;
const FIB_TRIE = `Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 192.0.2.0
        /24 link UNICAST
     |-- 192.0.2.7
        /32 host LOCAL
     |-- 10.55.12.1
        /32 host LOCAL
     |-- 10.9.9.9
        /32 host LOCAL
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 127.0.0.1
        /32 host LOCAL
`;
const IF_INET6 = `fd420001000000000000000000000001 05 40 00 80     br0
fe80000000000000021122fffe334455 02 40 20 80     eth0
00000000000000000000000000000001 01 80 10 80       lo
`;

test('usedSubnetsFrom: routes and addresses, no default, link-local, multicast or host routes', () => {
  assert.deepEqual(usedSubnetsFrom({ route: ROUTE, ipv6Route: IPV6_ROUTE, fibTrie: FIB_TRIE, ifInet6: IF_INET6 }), [
    '10.55.12.0/24',
    '10.9.9.9/32',
    '127.0.0.0/8',
    '192.0.2.0/24',
    'fd00::/64',
    'fd42:1::/64',
  ]);
});

test('CIDR helpers', () => {
  assert.equal(ipv4Network('10.55.12.77', 24), '10.55.12.0/24');
  assert.equal(ipv4Network('10.55.12.77', 0), '0.0.0.0/0');
  assert.equal(ipv6NetworkOfHex('fd420001000000000000000000000001', 64), 'fd42:1::/64');
  assert.equal(ipv6NetworkOfHex('fd420001abcd00000000000000000001', 36), 'fd42:1:a000::/36');
  assert.equal(ipv6Hex('fd42:1::1'), 'fd420001000000000000000000000001');
  assert.equal(ipv6Hex('::1'), '00000000000000000000000000000001');
  assert.deepEqual(parseIpv6Routes(IPV6_ROUTE).slice(0, 2), [
    { iface: 'eth0', cidr: 'fd00::/64' },
    { iface: 'eth0', cidr: 'fe80::/64' },
  ]);
});
