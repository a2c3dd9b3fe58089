import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeConfig, validateConfig } from './config-keys.ts';
import { checkNicFeatures } from './containers.ts';
import { validateDevices, validateExpandedDevices } from './devices.ts';
import { ValidationError } from './errors.ts';
import { instanceConfigKeys } from './instance-config.ts';
import { validateContainerName, validateName } from './names.ts';

test('entity names: 1..64 printable ASCII, no path or URL separators, not . or ..', () => {
  for (const ok of ['web', 'a.b', 'x_y-z', 'A1', 'a'.repeat(64)]) assert.equal(validateName('Profile', ok), ok);
  for (const bad of ['', 'a/b', 'a b', '..', '.', 'a'.repeat(65), 'tab\t', 'ünï', 'a:b', 'a,b', 'a?b', 'a%2f', 5])
    assert.throws(() => validateName('Profile', bad), ValidationError, String(bad));
});

test('container names are host names', () => {
  assert.equal(validateContainerName('web-1'), 'web-1');
  for (const bad of ['1web', '-web', 'web-', 'we_b', 'a.b', 'a'.repeat(65)])
    assert.throws(() => validateContainerName(bad), ValidationError, bad);
});

test('instance config: known keys with valid values pass; unknown, read-only or bad values are refused naming the key', () => {
  validateConfig(
    'profile',
    {
      'limits.cpu': '0-3,6',
      'limits.memory': '512MiB',
      'limits.memory.swap': 'false',
      'limits.kernel.nofile': '1024:4096',
      'security.privileged': 'true',
      'raw.id_map': 'both 1000 1000\nuid 50-60 500-510',
      'user.anything.here': 'x',
      'environment.FOO': 'bar',
      'boot.autostart.priority': '-3',
    },
    instanceConfigKeys,
  );
  const refuse = (config: Record<string, string>, re: RegExp) =>
    assert.throws(
      () => validateConfig('profile', config, instanceConfigKeys),
      (e: Error) => e instanceof ValidationError && re.test(e.message),
    );
  refuse({ 'limits.bogus': '1' }, /Unknown profile config key "limits.bogus"/);
  refuse({ 'limits.memory': 'lots' }, /limits.memory/);
  refuse({ 'limits.cpu': 'two' }, /limits.cpu/);
  refuse({ 'security.privileged': 'maybe' }, /security.privileged/);
  refuse({ 'raw.id_map': 'everything 1 2' }, /raw.id_map/);
  refuse({ 'volatile.eth0.hwaddr': 'x' }, /read-only/);
  refuse({ 'user.': 'x' }, /Unknown/);
});

test('instance config: values LXC or the kernel would refuse, and contradicting keys, are refused up front', () => {
  const refuse = (config: Record<string, string>, re: RegExp) =>
    assert.throws(
      () => validateConfig('container', config, instanceConfigKeys),
      (e: Error) => e instanceof ValidationError && re.test(e.message),
      JSON.stringify(config),
    );
  validateConfig(
    'container',
    {
      'limits.cpu': '2',
      'limits.memory': '25%',
      'limits.processes': '200',
      'limits.kernel.nofile': '512:unlimited',
      'security.idmap.isolated': 'true',
      'security.idmap.size': '100000',
      'security.idmap.base': '2000000',
      'security.syscalls.blacklist': 'mount errno 1\n# a comment\n\nkeyctl',
      'security.syscalls.blacklist_compat': 'true',
      'environment.PATH': '/bin:/sbin',
    },
    instanceConfigKeys,
  );
  validateConfig(
    'container',
    { 'security.syscalls.whitelist': 'read\nwrite', 'security.syscalls.blacklist_compat': 'false' },
    instanceConfigKeys,
  );
  refuse({ 'limits.cpu': '0' }, /limits.cpu.*at least 1/);
  refuse({ 'limits.cpu': '3-1' }, /limits.cpu.*ends before it starts/);
  refuse({ 'limits.memory': '0' }, /limits.memory.*above 0/);
  refuse({ 'limits.memory': '150%' }, /limits.memory.*at most 100/);
  refuse({ 'limits.processes': '0' }, /limits.processes/);
  refuse({ 'limits.kernel.nofile': '10:5' }, /soft limit must not exceed the hard limit/);
  refuse({ 'limits.kernel.bogus': '1' }, /unknown kernel limit "limits.kernel.bogus"/);
  refuse({ 'security.idmap.size': '0' }, /security.idmap.size/);
  refuse({ 'security.idmap.base': '-1' }, /security.idmap.base/);
  refuse({ 'raw.id_map': 'both 1000-1001 1000' }, /raw.id_map.*same length/);
  refuse({ 'raw.id_map': 'uid 5-1 5-1' }, /raw.id_map.*ends before it starts/);
  refuse(
    { 'security.syscalls.whitelist': 'read', 'security.syscalls.blacklist': 'mount' },
    /whitelist cannot be combined/,
  );
  refuse(
    { 'security.syscalls.whitelist': 'read', 'security.syscalls.blacklist_compat': 'true' },
    /whitelist cannot be combined/,
  );
  refuse({ 'security.syscalls.blacklist': '[all]\nmount' }, /bad rule "\[all\]"/);
  refuse({ 'security.syscalls.blacklist': 'mount\r' }, /carriage return/);
  refuse({ 'environment.FOO': 'a\nlxc.hook.pre-start = /bin/evil' }, /environment.FOO.*line breaks/);
  refuse({ 'environment.A=B': 'x' }, /environment variable name/);
  refuse({ 'volatile.base_image': 'x' }, /read-only/);
});

test('devices: disks are host paths or custom volumes; NICs need an existing bridge; unix device numbers', () => {
  validateDevices({
    vol: {
      type: 'disk',
      path: '/mnt/data',
      pool: 'default',
      source: 'vol1',
      readonly: 'true',
      propagation: 'rslave',
      recursive: 'true',
    },
    host: { type: 'disk', path: '/mnt/host', source: '/srv/x', shift: 'true', optional: 'true' },
    eth0: { type: 'nic', parent: 'br0', hwaddr: '00:16:3e:01:02:03', mtu: '1500' },
    tun: {
      type: 'unix-char',
      source: '/dev/net/tun',
      major: '10',
      minor: '200',
      mode: '0666',
      uid: '1000',
      gid: '1000',
      required: 'false',
    },
    loop: { type: 'unix-block', path: '/dev/loop9', major: '7' },
  });
  const refuse = (devices: Record<string, Record<string, string>>, re: RegExp) =>
    assert.throws(
      () => validateDevices(devices),
      (e: Error) => e instanceof ValidationError && re.test(e.message),
      JSON.stringify(devices),
    );
  refuse({ x: { type: 'disk', path: '/mnt', pool: 'default', source: '/srv' } }, /name of a custom volume/);
  refuse({ x: { type: 'disk', path: '/mnt', source: 'relative' } }, /host path/);
  refuse({ x: { type: 'disk', path: '/mnt', pool: 'default', source: 'v', optional: 'true' } }, /apply to host paths/);
  refuse({ x: { type: 'disk', path: '/mnt', source: '/srv', size: '1GiB' } }, /only to the root disk/);
  refuse({ x: { type: 'disk', path: '/', pool: 'default', source: '/srv' } }, /root disk takes no "source"/);
  refuse({ x: { type: 'disk', path: '/mnt', source: '/srv', propagation: 'sideways' } }, /propagation/);
  validateDevices({
    a: {
      type: 'nic',
      network: 'svcdbr0',
      'ipv4.address': '10.0.0.2',
      'ipv6.address': 'fd00::2',
      'ipv4.routes': '10.9.0.0/24,10.8.0.0/16',
      'ipv6.routes': 'fd01::/64',
    },
    b: {
      type: 'nic',
      nictype: 'bridged',
      parent: 'br0',
      'limits.ingress': '10Mbit',
      'limits.egress': '100kbit',
      'security.mac_filtering': 'true',
      vlan: '12',
    },
    c: { type: 'nic', parent: 'br1', network: 'br1', 'limits.max': '1Gbit' },
  });
  refuse({ x: { type: 'nic', network: 'a.b' } }, /network name/);
  refuse({ x: { type: 'nic', network: 'n1', nictype: 'bridged' } }, /"nictype" must not be set with "network"/);
  refuse({ x: { type: 'nic', network: 'n1', parent: 'n2' } }, /name different networks/);
  refuse(
    { x: { type: 'nic', parent: 'br0', 'ipv4.address': '10.0.0.300' } },
    /invalid "ipv4.address": must be an IPv4 address/,
  );
  refuse({ x: { type: 'nic', parent: 'br0', 'ipv6.address': '10.0.0.3' } }, /invalid "ipv6.address"/);
  refuse({ x: { type: 'nic', parent: 'br0', 'limits.ingress': '10MB' } }, /bit rate/);
  refuse({ x: { type: 'nic', parent: 'br0', 'security.mac_filtering': 'maybe' } }, /mac_filtering/);
  refuse({ x: { type: 'nic', parent: 'br0', vlan: '5000' } }, /"vlan"/);
  refuse(
    { x: { type: 'nic', parent: 'br0', 'ipv4.address': '10.0.0.2', 'ipv4.routes': '10.1.0.0/33' } },
    /IPv4 subnets in CIDR form \(bad "10.1.0.0\/33"\)/,
  );
  refuse(
    { x: { type: 'nic', parent: 'br0', 'ipv4.routes': '10.1.0.0/24' } },
    /"ipv4.routes" needs a static "ipv4.address"/,
  );
  refuse({ x: { type: 'nic', parent: 'br0', hwaddr: '01:00:5e:00:00:01' } }, /unicast/);
  refuse({ x: { type: 'nic', parent: 'br0', mtu: '10' } }, /mtu/);
  refuse({ x: { type: 'nic', parent: '..' } }, /interface name/);
  refuse({ x: { type: 'nic', parent: 'br0', nictype: 'ipvlan' } }, /nictype/);
  refuse({ x: { type: 'unix-char', path: 'dev/tun' } }, /absolute path/);
  refuse({ x: { type: 'unix-char', path: '/dev/x', major: '5000' } }, /major/);
  refuse({ x: { type: 'unix-char', path: '/dev/x', mode: 'rw' } }, /mode/);
  refuse({ x: { type: 'unix-char', path: '/dev/x', required: 'perhaps' } }, /required/);
});

test('expanded devices: one mount per path, one NIC per interface name', () => {
  validateExpandedDevices({
    root: { type: 'disk', path: '/', pool: 'p' },
    a: { type: 'disk', path: '/mnt/a', source: '/a' },
    eth0: { type: 'nic', parent: 'br0' },
    n1: { type: 'nic', parent: 'br0', name: 'eth1' },
  });
  assert.throws(
    () =>
      validateExpandedDevices({
        a: { type: 'disk', path: '/mnt/a', source: '/a' },
        b: { type: 'disk', path: '/mnt/a/', source: '/b' },
      }),
    /"a" and "b" are both mounted at "\/mnt\/a"/,
  );
  assert.throws(
    () =>
      validateExpandedDevices({
        eth0: { type: 'nic', parent: 'br0' },
        n1: { type: 'nic', parent: 'br1', name: 'eth0' },
      }),
    /both use the interface name "eth0"/,
  );
});

test('devices: per-type properties and required fields', () => {
  validateDevices({
    root: { type: 'disk', path: '/', pool: 'default' },
    data: { type: 'disk', path: '/srv', source: '/data', propagation: 'rshared' },
    eth0: { type: 'nic', nictype: 'bridged', parent: 'br0' },
    tty: { type: 'unix-char', path: '/dev/ttyS0' },
  });
  const refuse = (devices: Record<string, Record<string, string>>, re: RegExp) =>
    assert.throws(
      () => validateDevices(devices),
      (e: Error) => e instanceof ValidationError && re.test(e.message),
    );
  refuse({ x: { type: 'pci' } }, /unsupported device type "pci"/);
  refuse({ x: { path: '/' } }, /has no type/);
  refuse({ x: { type: 'disk', source: '/a' } }, /"path" is required/);
  refuse({ x: { type: 'disk', path: '/' } }, /needs a "pool"/);
  refuse({ x: { type: 'disk', path: '/a/../b', source: '/s' } }, /absolute path/);
  refuse(
    { x: { type: 'nic', nictype: 'bridged' } },
    /"parent" \(a host bridge or managed network\) or "network" is required/,
  );
  refuse({ x: { type: 'nic', parent: 'br0', colour: 'red' } }, /unknown property "colour"/);
  refuse({ 'bad name!': { type: 'none' } }, /Invalid device name/);
  refuse({ x: { type: 'unix-block' } }, /"path" or "source"/);
});

test('PATCH merge: given keys replace, "" removes', () => {
  assert.deepEqual(mergeConfig({ a: '1', b: '2' }, { b: '', c: '3' }), { a: '1', c: '3' });
  assert.deepEqual(mergeConfig({ a: '1' }, undefined), { a: '1' });
});

test('nic vlan: refused naming what the host lacks, and refused as not built where the host has 802.1Q', async () => {
  const devices = { eth0: { type: 'nic', parent: 'br0', vlan: '10' }, eth1: { type: 'nic', parent: 'br0' } };
  const asked: string[] = [];
  const lacking = async (f: 'vlan') => (asked.push(f), { ok: false, missing: '802.1Q VLANs (kernel module 8021q)' });
  await assert.rejects(
    checkNicFeatures(devices, lacking),
    (e: Error) =>
      e instanceof ValidationError &&
      /Device "eth0" \(nic\): "vlan" is not available on this host: 802\.1Q VLANs/.test(e.message),
  );
  assert.deepEqual(asked, ['vlan']);
  await assert.rejects(
    checkNicFeatures(devices, async () => ({ ok: true })),
    (e: Error) =>
      e instanceof ValidationError && /Device "eth0" \(nic\): "vlan" is not supported by svcd yet/.test(e.message),
  );
  await checkNicFeatures({ eth1: devices.eth1 }, lacking);
  assert.deepEqual(asked, ['vlan'], 'no probe without a vlan key');
});
