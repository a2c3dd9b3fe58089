import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { readLxcHostFeatures } from './host-features.ts';

const roots: string[] = [];
after(async () => {
  for (const r of roots) await rm(r, { recursive: true, force: true });
});

async function sys(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'svcd-sys-'));
  roots.push(root);
  for (const [f, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, f)), { recursive: true });
    await writeFile(path.join(root, f), text);
  }
  return root;
}

test('unified host with AppArmor', async () => {
  const root = await sys({
    'fs/cgroup/cgroup.controllers': 'cpu memory pids\n',
    'module/apparmor/parameters/enabled': 'Y\n',
  });
  assert.deepEqual(await readLxcHostFeatures({ sysRoot: root }), {
    cgroupVersion: 2,
    apparmorEnabled: true,
    swapAccounting: true,
  });
});

test('hybrid host (cgroup2 only under /unified), no AppArmor, swap accounting on', async () => {
  const root = await sys({
    'fs/cgroup/unified/cgroup.controllers': '',
    'fs/cgroup/memory/memory.memsw.limit_in_bytes': '9223372036854771712\n',
  });
  assert.deepEqual(await readLxcHostFeatures({ sysRoot: root }), {
    cgroupVersion: 1,
    apparmorEnabled: false,
    swapAccounting: true,
  });
});

test('legacy host without swap accounting, AppArmor built in but off', async () => {
  const root = await sys({
    'fs/cgroup/memory/memory.limit_in_bytes': '1\n',
    'module/apparmor/parameters/enabled': 'N\n',
  });
  assert.deepEqual(await readLxcHostFeatures({ sysRoot: root }), {
    cgroupVersion: 1,
    apparmorEnabled: false,
    swapAccounting: false,
  });
});
