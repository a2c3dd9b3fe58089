import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeLxcSpec, cpusetOf, memoryBytesOf } from './lxc-spec.ts';

const host = { cgroupVersion: 1 as const, apparmorEnabled: false, cpuCount: 4, memoryBytes: 8 * 1024 ** 3 };

test('limits.cpu: a count takes the first CPUs (capped at the host), a set is kept', () => {
  assert.equal(cpusetOf('1', 4), '0');
  assert.equal(cpusetOf('2', 4), '0-1');
  assert.equal(cpusetOf('16', 4), '0-3');
  assert.equal(cpusetOf('0-1,3', 4), '0-1,3');
  assert.equal(cpusetOf(undefined, 4), undefined);
  assert.throws(() => cpusetOf('2-4', 4), /limits.cpu=2-4 names CPU 4, but this host has CPUs 0-3/);
});

test('limits.memory: sizes and percentages of the host', () => {
  assert.equal(memoryBytesOf('512MiB', host.memoryBytes), 512 * 1024 ** 2);
  assert.equal(memoryBytesOf('1GB', host.memoryBytes), 1e9);
  assert.equal(memoryBytesOf('50%', host.memoryBytes), 4 * 1024 ** 3);
  assert.equal(memoryBytesOf(undefined, host.memoryBytes), undefined);
});

test('the spec: unprivileged by default with an idmapped rootfs; privileged without a map; env and kernel limits', () => {
  const base = {
    hostname: 'web',
    architecture: 'x86_64',
    rootfsPath: '/r',
    idmap: { uid: [{ nsid: 0, hostid: 1000000, count: 65536 }], gid: [{ nsid: 0, hostid: 1000000, count: 65536 }] },
    host,
    logFile: '/l',
    consoleLogFile: '/c',
    nics: [],
    disks: [],
  };
  const u = computeLxcSpec({
    ...base,
    config: {
      'environment.FOO': 'bar',
      'limits.kernel.nofile': '1024',
      'limits.cpu': '2',
      'limits.memory': '1GiB',
      'limits.processes': '100',
    },
  });
  assert.equal(u.privileged, false);
  assert.equal(u.idmappedRootfs, true);
  assert.deepEqual(u.idmap, base.idmap);
  assert.deepEqual(u.environment, { FOO: 'bar' });
  assert.deepEqual(u.prlimits, { nofile: '1024' });
  assert.deepEqual(u.limits, { cpuset: '0-1', memoryBytes: 1024 ** 3, processes: 100 });
  const p = computeLxcSpec({ ...base, config: { 'security.privileged': 'true' } });
  assert.equal(p.privileged, true);
  assert.equal(p.idmap, undefined);
  assert.equal(p.idmappedRootfs, undefined);
});

test('limits.memory.swap=false: memsw capped too only when the host has swap accounting; unix devices pass through', () => {
  const base = {
    hostname: 'web',
    architecture: 'x86_64',
    rootfsPath: '/r',
    idmap: { uid: [], gid: [] },
    logFile: '/l',
    consoleLogFile: '/c',
    nics: [],
    disks: [],
  };
  const config = { 'security.privileged': 'true', 'limits.memory': '50%', 'limits.memory.swap': 'false' };
  assert.deepEqual(computeLxcSpec({ ...base, host, config }).limits, { memoryBytes: 4 * 1024 ** 3, swap: false });
  assert.deepEqual(computeLxcSpec({ ...base, host: { ...host, swapAccounting: true }, config }).limits, {
    memoryBytes: 4 * 1024 ** 3,
    swap: false,
    swapAccounting: true,
  });
  assert.deepEqual(
    computeLxcSpec({
      ...base,
      host: { ...host, swapAccounting: true },
      config: { ...config, 'limits.memory.swap': 'true' },
    }).limits,
    { memoryBytes: 4 * 1024 ** 3, swap: true },
  );
  const dev = { type: 'char' as const, source: '/s/devices/unix.tun', target: '/dev/net/tun', major: 10, minor: 200 };
  assert.deepEqual(
    computeLxcSpec({ ...base, host, config, unixDevices: [dev], seccompProfile: '/s/seccomp' }).unixDevices,
    [dev],
  );
  assert.equal(computeLxcSpec({ ...base, host, config, unixDevices: [] }).unixDevices, undefined);
  assert.equal(computeLxcSpec({ ...base, host, config, seccompProfile: '/s/seccomp' }).seccompProfile, '/s/seccomp');
});

test('devsvc: its directory is mounted read-only at /dev/svc and /dev/lxd unless security.devsvc=false', () => {
  const base = {
    hostname: 'web',
    architecture: 'x86_64',
    rootfsPath: '/r',
    idmap: { uid: [], gid: [] },
    host,
    logFile: '/l',
    consoleLogFile: '/c',
    nics: [],
    disks: [],
    devsvcDir: '/s/devsvc/id',
  };
  const mount = (target: string) => ({ source: '/s/devsvc/id', target, kind: 'dir', readonly: true, optional: true });
  assert.deepEqual(computeLxcSpec({ ...base, config: { 'security.privileged': 'true' } }).disks, [
    mount('/dev/svc'),
    mount('/dev/lxd'),
  ]);
  assert.deepEqual(
    computeLxcSpec({ ...base, config: { 'security.privileged': 'true', 'security.devsvc': 'false' } }).disks,
    [],
  );
});

test('nvidia.runtime: with the hook found, LXC runs it with the environment it reads (as LXD sets it); environment.* wins', () => {
  const base = {
    hostname: 'g',
    architecture: 'x86_64',
    rootfsPath: '/r',
    idmap: { uid: [{ nsid: 0, hostid: 1000000, count: 65536 }], gid: [{ nsid: 0, hostid: 1000000, count: 65536 }] },
    host,
    logFile: '/l',
    consoleLogFile: '/c',
    nics: [],
    disks: [],
  };
  const config = {
    'nvidia.runtime': 'true',
    'nvidia.require.cuda': 'cuda>=11.0',
    'environment.NVIDIA_VISIBLE_DEVICES': 'all',
  };
  const s = computeLxcSpec({ ...base, config, nvidiaHook: '/usr/share/lxc/hooks/nvidia' });
  assert.deepEqual(s.mountHooks, ['/usr/share/lxc/hooks/nvidia']);
  assert.deepEqual(s.environment, {
    NVIDIA_VISIBLE_DEVICES: 'all',
    NVIDIA_DRIVER_CAPABILITIES: 'compute,utility',
    NVIDIA_REQUIRE_CUDA: 'cuda>=11.0',
  });
  assert.deepEqual(
    computeLxcSpec({
      ...base,
      config: { 'nvidia.runtime': 'true', 'nvidia.driver.capabilities': 'all' },
      nvidiaHook: '/h',
    }).environment,
    { NVIDIA_VISIBLE_DEVICES: 'none', NVIDIA_DRIVER_CAPABILITIES: 'all' },
  );
  const none = computeLxcSpec({ ...base, config: { 'nvidia.runtime': 'false' } });
  assert.equal(none.mountHooks, undefined);
  assert.deepEqual(none.environment, {});
});
