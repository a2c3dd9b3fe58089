import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { EXEC_OUTPUT_RETENTION_MS } from '../observers/exec-output-expiry.ts';
import { removeOldExecOutput } from './exec-output-files.ts';

test('recorded exec output older than the retention is removed; fresh output, other logs and links stay', async () => {
  const logs = await mkdtemp(path.join(os.tmpdir(), 'exec-expiry-'));
  try {
    const dir = path.join(logs, 'default_c1');
    await mkdir(dir);
    const now = Date.now();
    const old = (now - EXEC_OUTPUT_RETENTION_MS - 60_000) / 1000;
    const files = {
      'exec_0b6f6c1e-7d0a-4c1e-9f0e-1b2c3d4e5f60.stdout': old,
      'exec_0b6f6c1e-7d0a-4c1e-9f0e-1b2c3d4e5f60.stderr': old,
      'exec_aaaaaaaa-7d0a-4c1e-9f0e-1b2c3d4e5f60.stdout': (now - 60_000) / 1000,
      'lxc.log': old,
      'console.log': old,
    };
    for (const [name, t] of Object.entries(files)) {
      await writeFile(path.join(dir, name), 'x');
      await utimes(path.join(dir, name), t, t);
    }
    // an old-looking link to a file outside: never followed, never removed by name alone
    const outside = path.join(logs, 'outside');
    await writeFile(outside, 'keep');
    await utimes(outside, old, old);
    await symlink(outside, path.join(dir, 'exec_bbbbbbbb-7d0a-4c1e-9f0e-1b2c3d4e5f60.stdout'));

    const removed = await removeOldExecOutput(logs, now, EXEC_OUTPUT_RETENTION_MS);
    assert.equal(removed.length, 2);
    assert.deepEqual((await readdir(dir)).sort(), [
      'console.log',
      'exec_aaaaaaaa-7d0a-4c1e-9f0e-1b2c3d4e5f60.stdout',
      'exec_bbbbbbbb-7d0a-4c1e-9f0e-1b2c3d4e5f60.stdout',
      'lxc.log',
    ]);
    assert.deepEqual((await readdir(logs)).sort(), ['default_c1', 'outside']);
    assert.deepEqual(await removeOldExecOutput(path.join(logs, 'missing'), now, EXEC_OUTPUT_RETENTION_MS), []);
  } finally {
    await rm(logs, { recursive: true, force: true });
  }
});
