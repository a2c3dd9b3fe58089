import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ValidationError } from './errors.ts';
import { checkNetworkConfig, featuresNeeded, validateNetworkConfig, type ProbeResults } from './network-config.ts';

/** This kernel: vxlan, no gre, no fan patch, no Open vSwitch, no MAAS. */
const HOST: ProbeResults = {
  vxlan: { ok: true },
  gre: { ok: false, missing: ['kernel gre support'] },
  fan: { ok: false, missing: ['the Ubuntu fan kernel patch'] },
  openvswitch: { ok: false, missing: ['ovs-vsctl'] },
  maas: { ok: false, missing: ['MAAS server'] },
};
const ok = (config: Record<string, string>, probes: ProbeResults = HOST) =>
  validateNetworkConfig('t16br', config, probes);
/** Refused with a ValidationError whose message contains every fragment. */
function refused(config: Record<string, string>, ...fragments: string[]): void {
  assert.throws(
    () => ok(config),
    (e: unknown) => {
      assert.ok(e instanceof ValidationError, String(e));
      for (const f of fragments) assert.ok(e.message.includes(f), `"${e.message}" should name ${f}`);
      return true;
    },
    JSON.stringify(config),
  );
}

test('every bridge key of LXD 5.0 with a valid value passes', () => {
  ok({
    'bridge.driver': 'native',
    'bridge.external_interfaces': 'dummy0, dummy1',
    'bridge.hwaddr': '00:16:3e:aa:bb:cc',
    'bridge.mtu': '1400',
    'bridge.mode': 'standard',
    'dns.domain': 'lab.example',
    'dns.mode': 'dynamic',
    'dns.search': 'lab.example,example',
    'raw.dnsmasq': 'log-queries\nlocal-ttl=5',
    'ipv4.address': '10.99.3.1/24',
    'ipv4.dhcp': 'true',
    'ipv4.dhcp.expiry': '30m',
    'ipv4.dhcp.gateway': '10.99.3.254',
    'ipv4.dhcp.ranges': '10.99.3.10-10.99.3.20,10.99.3.100-10.99.3.100',
    'ipv4.firewall': 'false',
    'ipv4.nat': 'true',
    'ipv4.nat.order': 'after',
    'ipv4.nat.address': '192.0.2.5',
    'ipv4.routes': '10.100.0.0/16,10.101.0.0/24',
    'ipv4.routing': 'false',
    'ipv6.address': 'fd42:1:2:3::1/64',
    'ipv6.dhcp': 'true',
    'ipv6.dhcp.stateful': 'true',
    'ipv6.dhcp.expiry': 'infinite',
    'ipv6.dhcp.ranges': 'fd42:1:2:3::10-fd42:1:2:3::ff',
    'ipv6.firewall': 'true',
    'ipv6.nat': 'false',
    'ipv6.nat.order': 'before',
    'ipv6.routes': 'fd43::/48',
    'ipv6.routing': 'true',
    'tunnel.vx.protocol': 'vxlan',
    'tunnel.vx.remote': '192.0.2.9',
    'tunnel.vx.port': '4789',
    'tunnel.vx.id': '42',
    'tunnel.vx.ttl': '8',
    'tunnel.vx.interface': 'eth0',
    'user.note': 'anything at all',
  });
  ok({ 'ipv4.address': 'auto', 'ipv6.address': 'none', 'bridge.hwaddress': '02:00:00:00:00:01' });
  ok({});
});

test('unknown keys, volatile keys and bad values are refused naming the key', () => {
  refused({ 'ipv4.adress': '10.0.0.1/24' }, 'Unknown', '"ipv4.adress"');
  refused({ 'volatile.bridge.hwaddr': 'x' }, '"volatile.bridge.hwaddr"', 'read-only');
  refused({ 'bridge.driver': 'linux' }, '"bridge.driver"');
  refused({ 'bridge.external_interfaces': 'eth0,a/b' }, '"bridge.external_interfaces"', 'a/b');
  refused({ 'bridge.hwaddr': '01:00:00:00:00:01' }, '"bridge.hwaddr"', 'unicast');
  refused({ 'bridge.hwaddress': 'zz' }, '"bridge.hwaddress"');
  refused({ 'bridge.mtu': '9x' }, '"bridge.mtu"');
  refused({ 'bridge.mtu': '20' }, '"bridge.mtu"');
  refused({ 'dns.domain': 'bad_domain' }, '"dns.domain"');
  refused({ 'dns.mode': 'static' }, '"dns.mode"');
  refused({ 'dns.search': 'ok.example,-bad' }, '"dns.search"');
  refused({ 'ipv4.dhcp': 'maybe' }, '"ipv4.dhcp"');
  refused({ 'ipv4.dhcp.expiry': '1 hour' }, '"ipv4.dhcp.expiry"');
  refused({ 'ipv4.nat.order': 'first' }, '"ipv4.nat.order"');
  refused({ 'ipv4.routes': '10.0.0.0/8,300.1.0.0/16' }, '"ipv4.routes"', '300.1.0.0/16');
  refused({ 'ipv6.routes': '10.0.0.0/8' }, '"ipv6.routes"');
  refused({ 'ipv4.nat.address': 'fd42::1' }, '"ipv4.nat.address"');
});

test('ipv4.address / ipv6.address: auto, none, or a usable host address with its prefix', () => {
  refused({ 'ipv4.address': '10.0.3.1' }, '"ipv4.address"');
  refused({ 'ipv4.address': '10.0.3.0/24' }, '"ipv4.address"', 'network');
  refused({ 'ipv4.address': '10.0.3.255/24' }, '"ipv4.address"', 'broadcast');
  refused({ 'ipv4.address': '10.0.3.1/33' }, '"ipv4.address"');
  refused({ 'ipv4.address': 'fd42::1/64' }, '"ipv4.address"');
  refused({ 'ipv6.address': '10.0.3.1/24' }, '"ipv6.address"');
  refused({ 'ipv6.address': 'fd42::/64' }, '"ipv6.address"', 'network');
  refused({ 'ipv6.address': 'fd42::1/127' }, '"ipv6.address"');
});

test('DHCP ranges and gateway lie inside the subnet; the NAT source outside; they need a subnet', () => {
  const net = { 'ipv4.address': '10.0.3.1/24' };
  refused({ ...net, 'ipv4.dhcp.ranges': '10.0.3.50-10.0.3.10' }, '"ipv4.dhcp.ranges"', 'before');
  refused({ ...net, 'ipv4.dhcp.ranges': '10.0.3.10' }, '"ipv4.dhcp.ranges"');
  refused({ ...net, 'ipv4.dhcp.ranges': '10.0.3.10-10.0.4.10' }, '"ipv4.dhcp.ranges"', 'inside the subnet');
  refused({ ...net, 'ipv4.dhcp.gateway': '10.0.9.1' }, '"ipv4.dhcp.gateway"', 'inside the subnet');
  refused({ ...net, 'ipv4.nat.address': '10.0.3.7' }, '"ipv4.nat.address"');
  refused(
    { 'ipv4.address': 'none', 'ipv4.dhcp.ranges': '10.0.3.10-10.0.3.20' },
    '"ipv4.dhcp.ranges"',
    'needs an IPv4 subnet',
  );
  refused(
    { 'ipv6.address': 'none', 'ipv6.dhcp.ranges': 'fd42::10-fd42::20' },
    '"ipv6.dhcp.ranges"',
    'needs an IPv6 subnet',
  );
  refused(
    { 'ipv6.address': 'fd42::1/64', 'ipv6.dhcp.ranges': 'fd43::10-fd43::20' },
    '"ipv6.dhcp.ranges"',
    'inside the subnet',
  );
});

test('features this host lacks are refused naming what is missing; with the feature the key is checked', () => {
  refused({ 'bridge.driver': 'openvswitch' }, '"bridge.driver"', 'ovs-vsctl');
  refused({ 'bridge.mode': 'fan' }, '"bridge.mode"', 'fan kernel patch');
  refused({ 'fan.underlay_subnet': 'auto' }, '"fan.underlay_subnet"', 'fan kernel patch');
  refused({ 'fan.overlay_subnet': '240.0.0.0/8' }, '"fan.overlay_subnet"', 'fan kernel patch');
  refused({ 'fan.type': 'vxlan' }, '"fan.type"', 'fan kernel patch');
  refused({ 'maas.subnet.ipv4': 'x' }, '"maas.subnet.ipv4"', 'MAAS server');
  refused(
    { 'tunnel.g.protocol': 'gre', 'tunnel.g.local': '192.0.2.1', 'tunnel.g.remote': '192.0.2.2' },
    '"tunnel.g.protocol"',
    'kernel gre support',
  );
  const all: ProbeResults = { ...HOST, gre: { ok: true }, openvswitch: { ok: true }, fan: { ok: true } };
  ok({ 'bridge.driver': 'openvswitch' }, all);
  ok({ 'tunnel.g.protocol': 'gre', 'tunnel.g.local': '192.0.2.1', 'tunnel.g.remote': '192.0.2.2' }, all);
  ok({ 'fan.type': 'ipip' }, all);
  assert.throws(() => ok({ 'fan.type': 'gre' }, all), /"fan.type"/);
  assert.throws(() => ok({ 'bridge.driver': 'openvswitch' }, {}), /not probed/);
});

test('tunnels: known fields, a protocol, endpoints, one family, a short interface name', () => {
  const vx = { 'tunnel.vx.protocol': 'vxlan' };
  refused({ 'tunnel.vx.remote': '192.0.2.1' }, '"tunnel.vx.protocol"', 'required');
  refused({ 'tunnel.vx.colour': 'red', ...vx }, 'Unknown', '"tunnel.vx.colour"');
  refused({ 'tunnel.a.b.protocol': 'vxlan' }, 'Unknown', '"tunnel.a.b.protocol"');
  refused({ 'tunnel.v$x.protocol': 'vxlan' }, '"tunnel.v$x.protocol"');
  refused({ 'tunnel.vx.protocol': 'ipip' }, '"tunnel.vx.protocol"');
  refused(vx, '"tunnel.vx.remote"', '"tunnel.vx.group"');
  refused({ ...vx, 'tunnel.vx.remote': '192.0.2.1', 'tunnel.vx.group': '239.0.0.1' }, 'exclude');
  refused({ ...vx, 'tunnel.vx.remote': '192.0.2.1', 'tunnel.vx.port': '0' }, '"tunnel.vx.port"');
  refused({ ...vx, 'tunnel.vx.remote': '192.0.2.1', 'tunnel.vx.port': '65536' }, '"tunnel.vx.port"');
  refused({ ...vx, 'tunnel.vx.remote': '192.0.2.1', 'tunnel.vx.ttl': '0' }, '"tunnel.vx.ttl"');
  refused({ ...vx, 'tunnel.vx.remote': '192.0.2.1', 'tunnel.vx.id': 'one' }, '"tunnel.vx.id"');
  refused({ ...vx, 'tunnel.vx.remote': 'nowhere' }, '"tunnel.vx.remote"');
  refused({ ...vx, 'tunnel.vx.remote': '192.0.2.1', 'tunnel.vx.local': 'fd42::1' }, 'one family');
  refused({ 'tunnel.averylongname.protocol': 'vxlan', 'tunnel.averylongname.group': '239.0.0.1' }, '15 characters');
  ok({ ...vx, 'tunnel.vx.group': '239.0.0.1', 'tunnel.vx.interface': 'eth0' });
});

test('the features a config needs are probed, and only those', async () => {
  assert.deepEqual(featuresNeeded({ 'ipv4.address': 'auto' }), []);
  assert.deepEqual(
    featuresNeeded({
      'bridge.driver': 'openvswitch',
      'bridge.mode': 'fan',
      'tunnel.a.protocol': 'gre',
      'tunnel.b.protocol': 'vxlan',
      'maas.subnet.ipv4': 'x',
    }).sort(),
    ['fan', 'gre', 'maas', 'openvswitch', 'vxlan'],
  );
  const asked: string[] = [];
  const host = { probe: async (f: keyof ProbeResults) => (asked.push(f), HOST[f]!) };
  await checkNetworkConfig('t16br', { 'tunnel.vx.protocol': 'vxlan', 'tunnel.vx.remote': '192.0.2.1' }, host);
  assert.deepEqual(asked, ['vxlan']);
  await assert.rejects(
    checkNetworkConfig(
      't16br',
      { 'tunnel.g.protocol': 'gre', 'tunnel.g.local': '192.0.2.1', 'tunnel.g.remote': '192.0.2.2' },
      host,
    ),
    /kernel gre support/,
  );
});
