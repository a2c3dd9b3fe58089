import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeIdmap } from '../../host/idmap/compute-idmap.ts';
import {
  defaultHostName,
  defaultHwaddr,
  deviceNodeFileName,
  parseBitRate,
  diskRequestsOf,
  hostIdOf,
  hotplugSourcesOf,
  idmapSettingsOf,
  nicsOf,
  undelegatedRange,
  unixDeviceRequestsOf,
} from './device-specs.ts';

const ROOT = [{ start: 1000000, count: 1000000000 }];
const mapOf = (config: Record<string, string>, index = 3) =>
  computeIdmap({ subuid: ROOT, subgid: ROOT, ...idmapSettingsOf(config), index });

test('idmap keys → computeIdmap: shared block, isolated block by index, base, size, raw.id_map, privileged', () => {
  assert.deepEqual(mapOf({}).uid, [{ nsid: 0, hostid: 1000000, count: 65536 }]);
  assert.deepEqual(mapOf({ 'security.idmap.isolated': 'true' }).uid, [
    { nsid: 0, hostid: 1000000 + 65536 * 4, count: 65536 },
  ]);
  assert.deepEqual(mapOf({ 'security.idmap.isolated': 'false' }).uid, [{ nsid: 0, hostid: 1000000, count: 65536 }]);
  assert.deepEqual(mapOf({ 'security.idmap.base': '2000000', 'security.idmap.size': '100000' }).gid, [
    { nsid: 0, hostid: 2000000, count: 100000 },
  ]);
  assert.deepEqual(mapOf({ 'security.idmap.isolated': 'true', 'security.idmap.size': '131072' }, 0).uid, [
    { nsid: 0, hostid: 1065536, count: 131072 },
  ]);
  assert.deepEqual(mapOf({ 'raw.id_map': 'both 1000 1000' }).uid, [
    { nsid: 0, hostid: 1000000, count: 1000 },
    { nsid: 1000, hostid: 1000, count: 1 },
    { nsid: 1001, hostid: 1001001, count: 64535 },
  ]);
  assert.deepEqual(mapOf({ 'security.privileged': 'true', 'raw.id_map': 'both 1000 1000' }), { uid: [], gid: [] });
  assert.deepEqual(idmapSettingsOf({}), { privileged: false, isolated: false });
});

test('hostIdOf maps a container id through the ranges; identity without a map; undefined when unmapped', () => {
  const m = mapOf({ 'raw.id_map': 'uid 1000 1000' });
  assert.equal(hostIdOf(m.uid, 0), 1000000);
  assert.equal(hostIdOf(m.uid, 1000), 1000);
  assert.equal(hostIdOf(m.uid, 1001), 1001001);
  assert.equal(hostIdOf(m.uid, 65536), undefined);
  assert.equal(hostIdOf([], 42), 42);
});

test('NICs: sorted by device name, name defaults to the device name, MAC from hwaddr, volatile or a stable default, a stable host name', () => {
  const nics = nicsOf(
    {
      root: { type: 'disk', path: '/', pool: 'default' },
      net1: {
        type: 'nic',
        nictype: 'bridged',
        parent: 'br1',
        name: 'eth1',
        mtu: '1400',
        host_name: 'vethx',
        'limits.max': '10Mbit',
      },
      eth0: {
        type: 'nic',
        parent: 'br0',
        hwaddr: '00:16:3E:AA:BB:CC',
        'limits.ingress': '100kbit',
        'security.mac_filtering': 'true',
      },
      net2: {
        type: 'nic',
        network: 'n1',
        'ipv4.address': '10.1.0.5',
        'ipv4.routes': '10.9.0.0/24, 10.8.0.0/16',
        'limits.egress': '1.5Gbit',
      },
      net3: { type: 'nic', network: 'n1' },
    },
    'c-id',
    { 'volatile.net2.hwaddr': '00:16:3e:01:02:03' },
  );
  assert.deepEqual(nics, [
    {
      device: 'eth0',
      nictype: 'bridged',
      name: 'eth0',
      parent: 'br0',
      hwaddr: '00:16:3e:aa:bb:cc',
      hostName: defaultHostName('c-id', 'eth0'),
      routes: [],
      ingressBits: 100_000,
      macFiltering: true,
    },
    {
      device: 'net1',
      nictype: 'bridged',
      name: 'eth1',
      parent: 'br1',
      hwaddr: defaultHwaddr('c-id', 'net1'),
      mtu: 1400,
      hostName: 'vethx',
      routes: [],
      ingressBits: 10_000_000,
      egressBits: 10_000_000,
      macFiltering: false,
    },
    {
      device: 'net2',
      nictype: 'bridged',
      name: 'net2',
      parent: 'n1',
      hwaddr: '00:16:3e:01:02:03',
      hostName: defaultHostName('c-id', 'net2'),
      ipv4: '10.1.0.5',
      routes: ['10.9.0.0/24', '10.8.0.0/16'],
      egressBits: 1_500_000_000,
      macFiltering: false,
    },
    {
      device: 'net3',
      nictype: 'bridged',
      name: 'net3',
      parent: 'n1',
      hwaddr: defaultHwaddr('c-id', 'net3'),
      hostName: defaultHostName('c-id', 'net3'),
      routes: [],
      macFiltering: false,
    },
  ]);
  assert.match(defaultHwaddr('c-id', 'net1'), /^00:16:3e(:[0-9a-f]{2}){3}$/);
  assert.equal(defaultHwaddr('c-id', 'net1'), defaultHwaddr('c-id', 'net1'));
  assert.notEqual(defaultHwaddr('c-id', 'net1'), defaultHwaddr('c-id2', 'net1'));
  assert.match(defaultHostName('c-id', 'eth0'), /^veth[0-9a-f]{8}$/);
  assert.notEqual(defaultHostName('c-id', 'eth0'), defaultHostName('c-id', 'eth1'));
  assert.equal(parseBitRate('2500'), 2500);
});

test('t17 NICs of other types: p2p has no parent; physical keeps its MAC unless hwaddr, its host name is its parent', () => {
  const nics = nicsOf(
    {
      f: { type: 'nic', nictype: 'physical', parent: 't17p1', name: 'eth1' },
      g: { type: 'nic', nictype: 'physical', parent: 't17p2', hwaddr: '00:16:3e:00:00:09', mtu: '1450' },
      m: { type: 'nic', nictype: 'macvlan', parent: 't17a1' },
      p: { type: 'nic', nictype: 'p2p', host_name: 'vp', 'ipv6.routes': 'fd00:9::/64' },
    },
    'c-id',
    { 'volatile.f.hwaddr': '00:16:3e:00:00:01', 'volatile.m.hwaddr': '00:16:3e:00:00:02' },
  );
  assert.deepEqual(nics, [
    {
      device: 'f',
      nictype: 'physical',
      name: 'eth1',
      parent: 't17p1',
      hwaddr: '',
      hostName: 't17p1',
      routes: [],
      macFiltering: false,
    },
    {
      device: 'g',
      nictype: 'physical',
      name: 'g',
      parent: 't17p2',
      hwaddr: '00:16:3e:00:00:09',
      mtu: 1450,
      hostName: 't17p2',
      routes: [],
      macFiltering: false,
    },
    {
      device: 'm',
      nictype: 'macvlan',
      name: 'm',
      parent: 't17a1',
      hwaddr: '00:16:3e:00:00:02',
      hostName: defaultHostName('c-id', 'm'),
      routes: [],
      macFiltering: false,
    },
    {
      device: 'p',
      nictype: 'p2p',
      name: 'p',
      parent: '',
      hwaddr: defaultHwaddr('c-id', 'p'),
      hostName: 'vp',
      routes: ['fd00:9::/64'],
      macFiltering: false,
    },
  ]);
});

test('an infiniband device with nictype=physical is a physical nic on its IPoIB parent; nictype=sriov is none', () => {
  const nics = nicsOf(
    {
      ib: { type: 'infiniband', nictype: 'physical', parent: 'ib1', name: 'ib0', mtu: '2044' },
      vf: { type: 'infiniband', nictype: 'sriov', parent: 'ib2' },
    },
    'c-id',
  );
  assert.deepEqual(nics, [
    {
      device: 'ib',
      nictype: 'physical',
      name: 'ib0',
      parent: 'ib1',
      hwaddr: '',
      mtu: 2044,
      hostName: 'ib1',
      routes: [],
      macFiltering: false,
    },
  ]);
});

test('disks: the root disk is skipped; host paths and custom volumes with their mount options', () => {
  assert.deepEqual(
    diskRequestsOf({
      root: { type: 'disk', path: '/', pool: 'default' },
      data: { type: 'disk', path: '/mnt/data', pool: 'fast', source: 'vol1', readonly: 'true', propagation: 'rslave' },
      logs: { type: 'disk', path: '/var/log/host', source: '/var/log', recursive: 'yes', optional: '1', shift: 'true' },
      eth0: { type: 'nic', parent: 'br0' },
    }),
    [
      {
        device: 'data',
        kind: 'volume',
        pool: 'fast',
        volume: 'vol1',
        target: '/mnt/data',
        readonly: true,
        recursive: false,
        propagation: 'rslave',
      },
      {
        device: 'logs',
        kind: 'host',
        source: '/var/log',
        optional: true,
        shift: true,
        target: '/var/log/host',
        readonly: false,
        recursive: true,
      },
    ],
  );
});

test('unix devices: path and source default to each other; LXD defaults for owner, mode and required', () => {
  assert.deepEqual(
    unixDeviceRequestsOf({
      tun: { type: 'unix-char', path: '/dev/net/tun' },
      disk: {
        type: 'unix-block',
        source: '/dev/loop7',
        path: '/dev/xvdb',
        major: '7',
        minor: '7',
        uid: '1000',
        gid: '100',
        mode: '0600',
        required: 'false',
      },
      fuse: { type: 'unix-char', source: '/dev/fuse', required: 'true' },
    }),
    [
      {
        device: 'tun',
        type: 'char',
        source: '/dev/net/tun',
        target: '/dev/net/tun',
        uid: 0,
        gid: 0,
        mode: 0o660,
        required: true,
      },
      {
        device: 'disk',
        type: 'block',
        source: '/dev/loop7',
        target: '/dev/xvdb',
        major: 7,
        minor: 7,
        uid: 1000,
        gid: 100,
        mode: 0o600,
        required: false,
      },
      {
        device: 'fuse',
        type: 'char',
        source: '/dev/fuse',
        target: '/dev/fuse',
        uid: 0,
        gid: 0,
        mode: 0o660,
        required: true,
      },
    ],
  );
  assert.equal(deviceNodeFileName('tun'), 'unix.tun');
});

test('raw.id_map host ids must be delegated to root (newuidmap refuses others) unless host root is mapped', () => {
  assert.equal(undelegatedRange(mapOf({ 'raw.id_map': 'both 900000000 1000' }).uid, ROOT), undefined);
  assert.deepEqual(undelegatedRange(mapOf({ 'raw.id_map': 'both 1000 1000' }).uid, ROOT), {
    nsid: 1000,
    hostid: 1000,
    count: 1,
  });
  assert.equal(
    undelegatedRange(mapOf({ 'raw.id_map': 'both 1000 1000' }).uid, [{ start: 1000, count: 1 }, ...ROOT]),
    undefined,
  );
  assert.equal(undelegatedRange(mapOf({ 'raw.id_map': 'uid 0 0\nuid 1000 1000' }).uid, ROOT), undefined);
  assert.equal(undelegatedRange([], ROOT), undefined);
});

test('hotplug: only optional unix devices that take their numbers from the host node are watched', () => {
  const devices = {
    a: { type: 'unix-char', source: '/dev/b', required: 'false' },
    b: { type: 'unix-block', path: '/dev/a', required: 'false' },
    req: { type: 'unix-char', source: '/dev/c' },
    nums: { type: 'unix-char', source: '/dev/d', major: '1', minor: '3', required: 'false' },
    disk: { type: 'disk', source: '/srv', path: '/srv' },
  };
  assert.deepEqual(hotplugSourcesOf(devices), ['/dev/a', '/dev/b']);
});
