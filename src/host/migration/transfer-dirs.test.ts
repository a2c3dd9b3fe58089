import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sweepTransferDirs } from './rsync-transfer.ts';

test("the sweep removes the socket dirs of a killed svcd's sessions, never a live process's", async () => {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sweep-test-'));
  try {
    // a pid that is gone: a process that has exited (and been reaped)
    const dead = spawnSync('true').pid;
    for (const d of [`svcd-mig-${dead}-aaaaaa`, `svcd-mig-${process.pid}-bbbbbb`, 'svcd-mig-cccccc', 'other']) {
      await mkdir(path.join(tmp, d));
      await writeFile(path.join(tmp, d, 'rsh.sock'), '');
    }
    assert.equal(await sweepTransferDirs(tmp), 1);
    assert.deepEqual(
      (await readdir(tmp)).sort(),
      ['other', `svcd-mig-${process.pid}-bbbbbb`, 'svcd-mig-cccccc'].sort(),
    );
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
});
