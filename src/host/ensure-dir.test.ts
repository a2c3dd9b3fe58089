import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, chmod, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ensureDir } from './ensure-dir.ts';

test('ensureDir makes missing parents, sets the mode, and repairs a wrong mode', async () => {
  const base = await mkdtemp(path.join(os.tmpdir(), 'ensure-dir-'));
  try {
    const dir = path.join(base, 'a', 'b');
    await ensureDir(dir, 0o711);
    assert.equal((await stat(dir)).mode & 0o7777, 0o711);
    await chmod(dir, 0o755);
    await ensureDir(dir, 0o711);
    assert.equal((await stat(dir)).mode & 0o7777, 0o711);
    await mkdir(path.join(base, 'c'), { mode: 0o700 });
    await ensureDir(path.join(base, 'c'), 0o700);
    assert.equal((await stat(path.join(base, 'c'))).mode & 0o7777, 0o700);
    await writeFile(path.join(base, 'f'), '');
    await assert.rejects(ensureDir(path.join(base, 'f'), 0o700), /EEXIST/);
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});
