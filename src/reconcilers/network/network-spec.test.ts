import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultBridgeHwaddr, networkSpecOf, subnetOf } from './network-spec.ts';

const row = (config: Record<string, string>) => ({ id: '6b0c1b9e-0d0e-4f51-9a41-2f7f0d1c2b3a', name: 'br16', config });

test('subnets in CIDR form, both families', () => {
  assert.equal(subnetOf('10.55.12.1', 24), '10.55.12.0/24');
  assert.equal(subnetOf('10.55.12.130', 25), '10.55.12.128/25');
  assert.equal(subnetOf('fd42:1:2:3::1', 64), 'fd42:1:2:3::/64');
});

test('a bare config: no address family, LXD defaults elsewhere, a stable hwaddr', () => {
  const s = networkSpecOf(row({}), '/s/networks/br16');
  assert.equal(s.ipv4, undefined);
  assert.equal(s.ipv6, undefined);
  assert.deepEqual([s.name, s.dir, s.driver, s.mtu], ['br16', '/s/networks/br16', 'native', 1500]);
  assert.deepEqual(s.dns, { domain: 'svcd', mode: 'managed' });
  assert.equal(s.hwaddr, defaultBridgeHwaddr('6b0c1b9e-0d0e-4f51-9a41-2f7f0d1c2b3a'));
  assert.match(s.hwaddr, /^00:16:3e(:[0-9a-f]{2}){3}$/);
  assert.notEqual(defaultBridgeHwaddr('a'), defaultBridgeHwaddr('b'));
  assert.deepEqual(networkSpecOf(row({ 'ipv4.address': 'none', 'ipv6.address': 'none' }), '/d').ipv4, undefined);
});

test('an IPv4 family with its keys, defaults for the rest', () => {
  const s = networkSpecOf(
    row({
      'ipv4.address': '10.9.8.1/24',
      'ipv4.dhcp.ranges': '10.9.8.10-10.9.8.20, 10.9.8.50-10.9.8.60',
      'ipv4.nat': 'true',
      'ipv4.nat.order': 'after',
      'ipv4.routes': '10.99.0.0/16',
      'ipv4.firewall': 'false',
      'ipv4.dhcp.gateway': '10.9.8.254',
    }),
    '/d',
  );
  assert.deepEqual(s.ipv4, {
    address: '10.9.8.1',
    prefix: 24,
    subnet: '10.9.8.0/24',
    dhcp: true,
    dhcpRanges: [
      { start: '10.9.8.10', end: '10.9.8.20' },
      { start: '10.9.8.50', end: '10.9.8.60' },
    ],
    dhcpExpiry: '1h',
    dhcpGateway: '10.9.8.254',
    nat: true,
    natOrder: 'after',
    routing: true,
    firewall: false,
    routes: ['10.99.0.0/16'],
  });
  const off = networkSpecOf(
    row({ 'ipv4.address': '10.9.8.1/24', 'ipv4.dhcp': 'false', 'ipv4.routing': 'false', 'ipv4.dhcp.expiry': '30m' }),
    '/d',
  ).ipv4!;
  assert.deepEqual(
    [off.dhcp, off.routing, off.nat, off.natOrder, off.dhcpExpiry],
    [false, false, false, 'before', '30m'],
  );
});

test('IPv6, bridge keys, DNS and tunnels', () => {
  const s = networkSpecOf(
    row({
      'ipv6.address': 'fd42:aa::1/64',
      'ipv6.dhcp.stateful': 'true',
      'bridge.mtu': '1400',
      'bridge.hwaddr': '00:16:3E:AA:BB:CC',
      'bridge.external_interfaces': 'veth1, veth2',
      'dns.domain': 'lab',
      'dns.mode': 'none',
      'raw.dnsmasq': 'log-dhcp',
      'tunnel.b.protocol': 'vxlan',
      'tunnel.b.id': '7',
      'tunnel.b.remote': '127.0.0.2',
      'tunnel.a.protocol': 'gre',
      'tunnel.a.local': '127.0.0.1',
      'tunnel.a.ttl': '9',
    }),
    '/d',
  );
  assert.deepEqual([s.ipv6!.subnet, s.ipv6!.dhcpStateful, s.ipv6!.dhcp], ['fd42:aa::/64', true, true]);
  assert.deepEqual(
    [s.mtu, s.hwaddr, s.externalInterfaces, s.dns, s.rawDnsmasq],
    [1400, '00:16:3e:aa:bb:cc', ['veth1', 'veth2'], { domain: 'lab', mode: 'none' }, 'log-dhcp'],
  );
  assert.deepEqual(s.tunnels, [
    { name: 'a', protocol: 'gre', local: '127.0.0.1', ttl: 9 },
    { name: 'b', protocol: 'vxlan', remote: '127.0.0.2', id: 7 },
  ]);
});
