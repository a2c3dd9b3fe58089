import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import {
  applyCgroupSettings,
  cgroupSettingsOf,
  deviceRuleCovered,
  driftedCgroupFiles,
  parseAllowedDevices,
  sameCgroupValue,
} from './live-cgroup.ts';

test('cgroup v1 settings: set limits, and defaults for what is not set', () => {
  assert.deepEqual(cgroupSettingsOf(1, { cpuset: '0', memoryBytes: 64 << 20, processes: 50, swap: false }, true), [
    { controller: 'cpuset', file: 'cpuset.cpus', value: '0' },
    { controller: 'memory', file: 'memory.limit_in_bytes', value: String(64 << 20) },
    { controller: 'memory', file: 'memory.memsw.limit_in_bytes', value: String(64 << 20) },
    { controller: 'memory', file: 'memory.swappiness', value: '0' },
    { controller: 'pids', file: 'pids.max', value: '50' },
  ]);
  assert.deepEqual(cgroupSettingsOf(1, {}, false), [
    { controller: 'cpuset', file: 'cpuset.cpus', value: { inherit: true } },
    { controller: 'memory', file: 'memory.limit_in_bytes', value: '-1' },
    { controller: 'memory', file: 'memory.swappiness', value: { inherit: true } },
    { controller: 'pids', file: 'pids.max', value: 'max' },
  ]);
});

test('cgroup v2 settings', () => {
  assert.deepEqual(cgroupSettingsOf(2, { memoryBytes: 1 << 30 }, true), [
    { file: 'cpuset.cpus', value: '' },
    { file: 'memory.max', value: String(1 << 30) },
    { file: 'memory.swap.max', value: 'max' },
    { file: 'pids.max', value: 'max' },
  ]);
});

test('values compared as the kernel shows them', () => {
  assert.ok(sameCgroupValue('cpuset.cpus', '0,1', '0-1'));
  assert.ok(!sameCgroupValue('cpuset.cpus', '0', '0-1'));
  assert.ok(sameCgroupValue('memory.limit_in_bytes', '-1', '9223372036854771712'));
  assert.ok(sameCgroupValue('memory.limit_in_bytes', '64000000', '63999488'));
  assert.ok(!sameCgroupValue('memory.limit_in_bytes', '64000000', '9223372036854771712'));
  assert.ok(!sameCgroupValue('memory.limit_in_bytes', '-1', '64000000'));
  assert.ok(sameCgroupValue('pids.max', 'max', 'max\n'));
  assert.ok(!sameCgroupValue('pids.max', '50', 'max'));
});

test('applying writes only what differs, inherits from the parent, and reports drift', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'svcd-cg-'));
  try {
    const dir = path.join(root, 'memory', 'lxc.payload.c');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(root, 'memory', 'memory.swappiness'), '60\n');
    await writeFile(path.join(dir, 'memory.limit_in_bytes'), '9223372036854771712\n');
    await writeFile(path.join(dir, 'memory.swappiness'), '0\n');
    const cg = { dirOf: (c: string | undefined) => (c === 'memory' ? dir : undefined) };
    const applied = applyCgroupSettings(cg, cgroupSettingsOf(1, { memoryBytes: 1000 }, false));
    assert.equal(await readFile(path.join(dir, 'memory.limit_in_bytes'), 'utf8'), '1000');
    assert.equal(await readFile(path.join(dir, 'memory.swappiness'), 'utf8'), '60');
    assert.deepEqual(driftedCgroupFiles(applied), []);
    await writeFile(path.join(dir, 'memory.limit_in_bytes'), '5');
    assert.deepEqual(driftedCgroupFiles(applied), [path.join(dir, 'memory.limit_in_bytes')]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('device rules: what LXC allows every container is never taken back', () => {
  const base = parseAllowedDevices(
    'lxc.cgroup.devices.deny = a\nlxc.cgroup.devices.allow = c *:* m\nlxc.cgroup.devices.allow = c 1:3 rwm\nlxc.cgroup2.devices.allow = c 136:* rwm\n',
  );
  assert.deepEqual(base, ['c *:* m', 'c 1:3 rwm', 'c 136:* rwm']);
  assert.ok(deviceRuleCovered('c 1:3 rwm', base));
  assert.ok(deviceRuleCovered('c 136:4 rwm', base));
  assert.ok(!deviceRuleCovered('c 1:11 rwm', base));
  assert.ok(!deviceRuleCovered('b 1:3 rwm', base));
  assert.ok(deviceRuleCovered('b 8:0 rwm', ['a']));
});
