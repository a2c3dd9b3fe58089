import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { writeFileIfChanged } from './write-file-if-changed.ts';

test('writeFileIfChanged says whether it created, changed or left the file', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-wfic-'));
  try {
    const file = path.join(dir, 'config');
    assert.equal(await writeFileIfChanged(file, 'a\n'), 'created');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal(await writeFileIfChanged(file, 'a\n'), 'unchanged');
    assert.equal(await writeFileIfChanged(file, 'b\n'), 'changed');
    assert.equal(await readFile(file, 'utf8'), 'b\n');
    assert.deepEqual(await readdir(dir), ['config'], 'no temp file left');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
