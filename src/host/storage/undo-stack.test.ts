import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeDirs, removeMadeDirs } from './fs-helpers.ts';
import { withUndo } from './undo-stack.ts';

describe('makeDirs / withUndo', () => {
  let tmp = '';
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'svcd-helpers-test-'));
  });
  after(() => rm(tmp, { recursive: true, force: true }));

  it('reports exactly the directories it created, with the mode', async () => {
    const made = await makeDirs(path.join(tmp, 'a', 'b', 'c'), 0o711);
    assert.deepEqual(made, [path.join(tmp, 'a'), path.join(tmp, 'a', 'b'), path.join(tmp, 'a', 'b', 'c')]);
    assert.equal((await stat(path.join(tmp, 'a', 'b'))).mode & 0o777, 0o711);
    assert.deepEqual(await makeDirs(path.join(tmp, 'a', 'b')), []);
    await writeFile(path.join(tmp, 'a', 'keep'), 'x');
    await removeMadeDirs(made);
    await assert.rejects(stat(path.join(tmp, 'a', 'b')), { code: 'ENOENT' });
    assert.ok((await stat(path.join(tmp, 'a'))).isDirectory(), 'a non-empty directory is left alone');
  });

  it('unwinds newest first and rethrows the original error, noting undo failures', async () => {
    const order: string[] = [];
    await assert.rejects(
      withUndo(async (undo) => {
        undo.push('one', async () => void order.push('one'));
        undo.push('two', async () => {
          order.push('two');
          throw new Error('stuck');
        });
        throw new Error('step three failed');
      }),
      (e: unknown) => e instanceof Error && e.message === 'step three failed (cleanup also failed: two: stuck)',
    );
    assert.deepEqual(order, ['two', 'one']);
    assert.equal(await withUndo(async () => 7), 7);
  });
});
