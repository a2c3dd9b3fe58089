import assert from 'node:assert/strict';
import { access, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { parseMountinfo } from '../storage/mountinfo.ts';
import { removeLeftovers } from './remove-leftovers.ts';

const roots: string[] = [];
after(async () => {
  for (const r of roots) await rm(r, { recursive: true, force: true });
});

test('removes the container cgroup dirs (children first) in every hierarchy, reports busy ones', async () => {
  const r = await mkdtemp(path.join(os.tmpdir(), 'svcd-leftovers-'));
  roots.push(r);
  for (const d of [
    'memory/lxc.monitor.c1',
    'memory/lxc.payload.c1/init.scope',
    'systemd/lxc.monitor.c1',
    'unified/lxc.payload.c1',
    'memory/lxc.payload.c10',
    'pids/lxc.payload.c1',
  ]) {
    await mkdir(path.join(r, d), { recursive: true });
  }
  await writeFile(path.join(r, 'pids/lxc.payload.c1/not-a-cgroup'), '');
  const mounts = parseMountinfo(
    [
      `30 25 0:26 / ${r}/memory rw - cgroup cgroup rw,memory`,
      `31 25 0:27 / ${r}/systemd rw - cgroup cgroup rw,xattr,name=systemd`,
      `32 25 0:28 / ${r}/pids rw - cgroup cgroup rw,pids`,
      `33 25 0:29 / ${r}/unified rw - cgroup2 cgroup2 rw`,
    ].join('\n'),
  );
  const res = await removeLeftovers({ name: 'c1', mounts });
  assert.deepEqual(res.removed.sort(), [
    `${r}/memory/lxc.monitor.c1`,
    `${r}/memory/lxc.payload.c1`,
    `${r}/memory/lxc.payload.c1/init.scope`,
    `${r}/systemd/lxc.monitor.c1`,
    `${r}/unified/lxc.payload.c1`,
  ]);
  assert.deepEqual(res.busy, [`${r}/pids/lxc.payload.c1`]);
  await access(path.join(r, 'memory/lxc.payload.c10'));
  assert.deepEqual(await removeLeftovers({ name: 'c1', mounts: mounts.slice(0, 2) }), { removed: [], busy: [] });
  await assert.rejects(removeLeftovers({ name: '../etc', mounts }), /refusing/);
});
