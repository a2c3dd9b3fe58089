/**
 * A dir pool's trash on the real filesystem: a removed volume is gone from its path when removeVolume
 * returns and its files go in the background; a process killed (SIGKILL) between the rename and the
 * removal leaves nothing where svcd or LXC look, and the pool's next ensure (a start) empties the trash.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { createDirDriver } from '../../src/host/storage/dir.ts';
import { createTrash, trashDirOf } from '../../src/host/storage/trash.ts';
import type { PoolSpec, VolumeRef } from '../../src/host/storage/types.ts';
import { eventually } from '../support/http.ts';

const root = await mkdtemp(path.join(os.tmpdir(), 'svcd-trash-it-'));
after(() => rm(root, { recursive: true, force: true }));
const exists = (p: string) =>
  readdir(p).then(
    () => true,
    () => false,
  );
const vol: (id: string) => VolumeRef = (id) => ({ id, type: 'container' });

/** A volume with a few files in subdirectories (a rootfs in small). */
async function fill(p: string): Promise<void> {
  for (const d of ['bin', 'etc', 'usr/lib']) {
    await mkdir(path.join(p, d), { recursive: true });
    for (let i = 0; i < 20; i++) await writeFile(path.join(p, d, `f${i}`), 'x'.repeat(100));
  }
}

describe('dir pool trash', () => {
  it('removeVolume takes the volume away at once and empties the trash behind it', async () => {
    const pool: PoolSpec = { name: 'p1', driver: 'dir', config: { source: path.join(root, 'p1') }, stateDir: root };
    const dir = createDirDriver();
    await dir.ensurePool(pool);
    const p = dir.volumePath(pool, vol('c1'));
    await mkdir(p);
    await fill(p);
    await dir.removeVolume(pool, vol('c1'));
    assert.equal(await exists(p), false, 'the volume path is gone when removeVolume returns');
    await eventually(
      async () => (await readdir(trashDirOf(path.join(root, 'p1')))).length === 0 || undefined,
      'the trash emptied',
    );
    // Absent is fine (a retried delete).
    await dir.removeVolume(pool, vol('c1'));
  });

  it('a process killed between the rename and the removal leaves only the trash, which the next start empties', async () => {
    const poolRoot = path.join(root, 'p2');
    const pool: PoolSpec = { name: 'p2', driver: 'dir', config: { source: poolRoot }, stateDir: root };
    await createDirDriver().ensurePool(pool);
    const p = createDirDriver().volumePath(pool, vol('c2'));
    await mkdir(p);
    await fill(p);
    // A daemon whose removal never comes: it moves the volume, says so, and is killed there.
    const script = `
      import { createDirDriver } from ${JSON.stringify(path.resolve('src/host/storage/dir.ts'))};
      import { createTrash } from ${JSON.stringify(path.resolve('src/host/storage/trash.ts'))};
      const dir = createDirDriver({ trash: createTrash({ remove: () => new Promise(() => {}) }) });
      await dir.removeVolume(${JSON.stringify(pool)}, { id: 'c2', type: 'container' });
      process.stdout.write('moved\\n');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (b: Buffer) => b.toString().includes('moved') && resolve());
        child.on('exit', (code) => reject(new Error(`child exited (${code}) before moving the volume`)));
      });
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((r) => child.once('close', r));
    assert.equal(await exists(p), false, 'the killed process left no volume where it was');
    const left = await readdir(trashDirOf(poolRoot));
    assert.equal(left.length, 1, 'the moved volume waits in the trash');
    assert.ok(left[0]!.startsWith('c2.'));
    // The next start: the pool's ensure sweeps the trash.
    await createDirDriver().ensurePool(pool);
    await eventually(
      async () => (await readdir(trashDirOf(poolRoot))).length === 0 || undefined,
      'the next start emptied the trash',
    );
  });

  it('a sweep asked for while one runs runs again for what arrived meanwhile', async () => {
    const trashDir = path.join(root, 't3');
    let release: () => void = () => {};
    const removed: string[] = [];
    const trash = createTrash({
      remove: async (p) => {
        if (removed.length === 0) await new Promise<void>((r) => (release = r));
        removed.push(path.basename(p));
        await rm(p, { recursive: true, force: true });
      },
    });
    for (const n of ['a', 'b']) {
      await mkdir(path.join(root, n));
      await trash.discard(path.join(root, n), trashDir);
    }
    release();
    await trash.sweep(trashDir);
    assert.deepEqual(await readdir(trashDir), []);
    assert.equal(removed.length, 2);
  });
});
