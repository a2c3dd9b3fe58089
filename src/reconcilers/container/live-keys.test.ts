import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachArgs } from '../../host/lxc/live-mounts.ts';
import { isLiveConfigKey, isLiveDevice, pendingRestartOf, restartViewOf } from './live-keys.ts';

test('live keys: limits, environment and user keys; not seccomp, idmap or privilege', () => {
  for (const k of [
    'limits.cpu',
    'limits.memory',
    'limits.memory.swap',
    'limits.processes',
    'environment.FOO',
    'user.x',
    'boot.autostart',
  ])
    assert.ok(isLiveConfigKey(k), k);
  for (const k of [
    'security.privileged',
    'security.syscalls.blacklist',
    'raw.id_map',
    'limits.kernel.nofile',
    'security.idmap.isolated',
    'security.devsvc',
  ])
    assert.ok(!isLiveConfigKey(k), k);
});

test('live devices: disks but the root disk; unix nodes on cgroup v1 only; nics', () => {
  assert.ok(isLiveDevice({ type: 'disk', path: '/mnt', source: '/srv' }, 1));
  assert.ok(!isLiveDevice({ type: 'disk', path: '/', pool: 'default' }, 1));
  assert.ok(isLiveDevice({ type: 'unix-char', path: '/dev/null' }, 1));
  assert.ok(!isLiveDevice({ type: 'unix-char', path: '/dev/null' }, 2));
  assert.ok(isLiveDevice({ type: 'nic', nictype: 'bridged', parent: 'br0' }, 1));
});

test('pending restart: what differs from the start, by key and device', () => {
  const started = restartViewOf(
    { 'limits.memory': '1GB', 'security.privileged': 'false' },
    { root: { type: 'disk', path: '/', pool: 'default' }, eth0: { type: 'nic', parent: 'br0' } },
    1,
  );
  const same = restartViewOf(
    { 'limits.memory': '2GB', 'security.privileged': 'false', 'environment.X': 'y' },
    {
      root: { type: 'disk', path: '/', pool: 'default', size: '5GB' },
      eth0: { type: 'nic', parent: 'br0' },
      d: { type: 'disk', path: '/m', source: '/s' },
    },
    1,
  );
  assert.deepEqual(pendingRestartOf(started, same), []);
  const changed = restartViewOf(
    { 'security.privileged': 'true', 'limits.kernel.nofile': '10' },
    { root: { type: 'disk', path: '/', pool: 'other' } },
    1,
  );
  assert.deepEqual(
    pendingRestartOf(started, changed),
    ['devices.root', 'limits.kernel.nofile', 'security.privileged'],
    'a nic removed waits for nothing',
  );
});

test('the mount helper argv', () => {
  assert.deepEqual(
    attachArgs(42, {
      source: '/srv/x',
      target: 'mnt/x',
      kind: 'dir',
      readonly: true,
      recursive: true,
      idmap: true,
      propagation: 'rslave',
    }),
    ['attach', '42', '/srv/x', '/mnt/x', 'dir', 'ro', 'recursive', 'idmap', 'propagation=rslave'],
  );
  assert.deepEqual(attachArgs(7, { source: '/n', target: '/dev/x', kind: 'file' }), [
    'attach',
    '7',
    '/n',
    '/dev/x',
    'file',
  ]);
});
