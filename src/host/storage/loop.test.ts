import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { findLoopDevice, findLoopDevices, listLoopDevices, losetupArgs, parseBackingFile } from './loop.ts';

describe('parseBackingFile', () => {
  it('reads the path and the (deleted) marker', () => {
    assert.deepEqual(parseBackingFile('/var/lib/svcd/disks/p.img\n'), {
      path: '/var/lib/svcd/disks/p.img',
      deleted: false,
    });
    assert.deepEqual(parseBackingFile('/var/lib/svcd/disks/p.img (deleted)\n'), {
      path: '/var/lib/svcd/disks/p.img',
      deleted: true,
    });
  });

  it('builds losetup argv', () => {
    assert.deepEqual(losetupArgs.attach('/x.img'), ['--find', '--show', '/x.img']);
    assert.deepEqual(losetupArgs.detach('/dev/loop3'), ['--detach', '/dev/loop3']);
    assert.deepEqual(losetupArgs.refresh('/dev/loop3'), ['--set-capacity', '/dev/loop3']);
  });
});

describe('listLoopDevices / findLoopDevice (fake /sys)', () => {
  let sysRoot = '';
  const attach = async (name: string, backing?: string) => {
    await mkdir(path.join(sysRoot, 'block', name, 'loop'), { recursive: true });
    if (backing !== undefined)
      await writeFile(path.join(sysRoot, 'block', name, 'loop', 'backing_file'), `${backing}\n`);
  };

  before(async () => {
    sysRoot = await mkdtemp(path.join(os.tmpdir(), 'svcd-loop-test-'));
    await attach('loop10', '/nonexistent/svcd/a.img');
    await attach('loop2', '/nonexistent/svcd/b.img (deleted)');
    await attach('loop3'); // not attached: no backing_file
    await attach('loop1', '/nonexistent/svcd/b.img');
    await mkdir(path.join(sysRoot, 'block', 'vda'), { recursive: true });
  });
  after(() => rm(sysRoot, { recursive: true, force: true }));

  it('lists attached loop devices in numeric order', async () => {
    const all = await listLoopDevices({ sysRoot });
    assert.deepEqual(
      all.map((d) => [d.device, d.backingFile, d.deleted]),
      [
        ['/dev/loop1', '/nonexistent/svcd/b.img', false],
        ['/dev/loop2', '/nonexistent/svcd/b.img', true],
        ['/dev/loop10', '/nonexistent/svcd/a.img', false],
      ],
    );
  });

  it('finds by backing file, ignoring deleted ones unless asked', async () => {
    assert.equal(await findLoopDevice('/nonexistent/svcd/a.img', { sysRoot }), '/dev/loop10');
    assert.equal(await findLoopDevice('/nonexistent/svcd/./b.img', { sysRoot }), '/dev/loop1');
    assert.equal(await findLoopDevice('/nonexistent/svcd/c.img', { sysRoot }), undefined);
    const withDeleted = await findLoopDevices('/nonexistent/svcd/b.img', { sysRoot, includeDeleted: true });
    assert.deepEqual(
      withDeleted.map((d) => d.device),
      ['/dev/loop1', '/dev/loop2'],
    );
  });

  it('copes with a missing /sys/block', async () => {
    assert.deepEqual(await listLoopDevices({ sysRoot: path.join(sysRoot, 'nope') }), []);
  });
});
