import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  addressDeleteArgs,
  addressReplaceArgs,
  bridgeAddArgs,
  bridgeSetArgs,
  enslaveArgs,
  linkDeleteArgs,
  routeDeleteArgs,
  routeReplaceArgs,
  tunnelAddArgs,
} from './ip-args.ts';
import { defaultDhcpRanges } from './default-dhcp-ranges.ts';
import { networkSysctls } from './sysctl-writes.ts';
import { familySpec } from './test-specs.ts';

test('bridge, address, route and enslave argv', () => {
  assert.deepEqual(bridgeAddArgs('br0'), ['link', 'add', 'dev', 'br0', 'type', 'bridge']);
  assert.deepEqual(linkDeleteArgs('br0'), ['link', 'delete', 'dev', 'br0']);
  assert.deepEqual(bridgeSetArgs({ name: 'br0', hwaddr: '00:16:3e:00:00:01', mtu: 1400 }), [
    'link',
    'set',
    'dev',
    'br0',
    'address',
    '00:16:3e:00:00:01',
    'mtu',
    '1400',
    'up',
  ]);
  assert.deepEqual(addressReplaceArgs('br0', '10.0.0.1/24'), ['-4', 'addr', 'replace', '10.0.0.1/24', 'dev', 'br0']);
  assert.deepEqual(addressDeleteArgs('br0', 'fd42::1/64'), ['-6', 'addr', 'delete', 'fd42::1/64', 'dev', 'br0']);
  assert.deepEqual(routeReplaceArgs('br0', '10.9.0.0/16'), [
    '-4',
    'route',
    'replace',
    '10.9.0.0/16',
    'dev',
    'br0',
    'proto',
    'static',
  ]);
  assert.deepEqual(routeDeleteArgs('br0', 'fd43::/64'), ['-6', 'route', 'delete', 'fd43::/64', 'dev', 'br0']);
  assert.deepEqual(enslaveArgs('eth1', 'br0'), ['link', 'set', 'dev', 'eth1', 'master', 'br0', 'up']);
});

test('tunnel argv: gretap, unicast and multicast vxlan', () => {
  assert.deepEqual(tunnelAddArgs('br0', { name: 'a', protocol: 'gre', local: '192.0.2.1', remote: '192.0.2.2' }), [
    'link',
    'add',
    'dev',
    'br0-a',
    'type',
    'gretap',
    'local',
    '192.0.2.1',
    'remote',
    '192.0.2.2',
    'ttl',
    '64',
  ]);
  assert.deepEqual(
    tunnelAddArgs('br0', {
      name: 'v',
      protocol: 'vxlan',
      local: '192.0.2.1',
      remote: '192.0.2.2',
      id: 10,
      port: 4790,
      ttl: 5,
    }),
    [
      'link',
      'add',
      'dev',
      'br0-v',
      'type',
      'vxlan',
      'id',
      '10',
      'dstport',
      '4790',
      'local',
      '192.0.2.1',
      'remote',
      '192.0.2.2',
      'ttl',
      '5',
    ],
  );
  assert.deepEqual(tunnelAddArgs('br0', { name: 'm', protocol: 'vxlan', id: 3 }, 'eth0'), [
    'link',
    'add',
    'dev',
    'br0-m',
    'type',
    'vxlan',
    'id',
    '3',
    'dstport',
    '4789',
    'group',
    '239.0.0.1',
    'dev',
    'eth0',
    'ttl',
    '1',
  ]);
  assert.deepEqual(
    tunnelAddArgs('br0', { name: 'm', protocol: 'vxlan', group: '239.1.1.1', interface: 'eth2' }, 'eth0').slice(10, 14),
    ['group', '239.1.1.1', 'dev', 'eth2'],
  );
});

test('sysctls: forwarding when routing, IPv6 off without an IPv6 side', () => {
  assert.deepEqual(networkSysctls({ name: 'br0', ipv4: familySpec('10.0.0.1', 24, '10.0.0.0/24') }), [
    { path: 'net/ipv6/conf/br0/disable_ipv6', value: '1' },
  ]);
  assert.deepEqual(
    networkSysctls({
      name: 'br0',
      ipv4: familySpec('10.0.0.1', 24, '10.0.0.0/24', { routing: true }),
      ipv6: familySpec('fd42::1', 64, 'fd42::/64', { routing: true }),
    }),
    [
      { path: 'net/ipv4/ip_forward', value: '1' },
      { path: 'net/ipv6/conf/br0/disable_ipv6', value: '0' },
      { path: 'net/ipv6/conf/br0/accept_ra', value: '0' },
      { path: 'net/ipv6/conf/br0/autoconf', value: '0' },
      { path: 'net/ipv6/conf/br0/accept_dad', value: '0' },
      { path: 'net/ipv6/conf/br0/forwarding', value: '1' },
      { path: 'net/ipv6/conf/all/forwarding', value: '1' },
    ],
  );
});

test('default DHCP ranges: the subnet without network, broadcast and gateway', () => {
  assert.deepEqual(defaultDhcpRanges({ address: '10.0.0.1', prefix: 24 }), [{ start: '10.0.0.2', end: '10.0.0.254' }]);
  assert.deepEqual(defaultDhcpRanges({ address: '10.0.0.254', prefix: 24 }), [
    { start: '10.0.0.1', end: '10.0.0.253' },
  ]);
  assert.deepEqual(defaultDhcpRanges({ address: '10.0.0.100', prefix: 24 }), [
    { start: '10.0.0.1', end: '10.0.0.99' },
    { start: '10.0.0.101', end: '10.0.0.254' },
  ]);
  assert.deepEqual(defaultDhcpRanges({ address: 'fd42:1::1', prefix: 64 }), [
    { start: 'fd42:1::2', end: 'fd42:1::ffff:ffff:ffff:ffff' },
  ]);
});
