/**
 * unpackImage / packImage / inspectImage against the host's GNU tar and unsquashfs: ownership,
 * modes, symlinks, hardlinks and device nodes survive; metadata.yaml and templates/ land beside rootfs/.
 */
import assert from 'node:assert/strict';
import {
  chmod,
  chown,
  copyFile,
  link,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { InvalidImageError } from '../../src/host/images/errors.ts';
import { inspectImage } from '../../src/host/images/inspect-image.ts';
import { packImage } from '../../src/host/images/pack-image.ts';
import { unpackImage } from '../../src/host/images/unpack-image.ts';

const skip = process.getuid?.() === 0 ? undefined : 'unpacking with ownership needs root';
if (skip) console.log(`# skipping image unpack tests: ${skip}`);
const hasUnsquashfs = await runCommand('unsquashfs', ['-v']).then(
  () => true,
  (e: unknown) => !/ENOENT|not found/i.test(String(e)),
);

describe('unpackImage', { skip }, () => {
  let dir = '';
  let src = '';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-unpack-'));
    src = path.join(dir, 'src');
    const root = path.join(src, 'rootfs');
    await mkdir(path.join(root, 'bin'), { recursive: true });
    await mkdir(path.join(root, 'dev'), { recursive: true });
    await mkdir(path.join(root, 'home/user'), { recursive: true });
    await mkdir(path.join(root, 'tmp'), { recursive: true });
    await mkdir(path.join(src, 'templates'), { recursive: true });
    await copyFile('/bin/busybox', path.join(root, 'bin/busybox'));
    await symlink('busybox', path.join(root, 'bin/sh'));
    await symlink('/bin/busybox', path.join(root, 'bin/ls'));
    await link(path.join(root, 'bin/busybox'), path.join(root, 'bin/busybox.hard'));
    await writeFile(path.join(root, 'home/user/owned'), 'mine\n');
    await chown(path.join(root, 'home/user/owned'), 1000, 1001);
    await chown(path.join(root, 'home/user'), 1000, 1000);
    await chmod(path.join(root, 'home/user/owned'), 0o4750);
    await chmod(path.join(root, 'tmp'), 0o1777);
    await runCommand('mknod', ['-m', '0666', path.join(root, 'dev/null'), 'c', '1', '3']);
    await writeFile(path.join(src, 'templates/hostname.tpl'), 'x\n');
    await writeFile(
      path.join(src, 'metadata.yaml'),
      'architecture: x86_64\ncreation_date: 1700000000\nproperties:\n  os: busybox\n',
    );
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function checkTree(target: string, opts: { templates: boolean }) {
    assert.match(await readFile(path.join(target, 'metadata.yaml'), 'utf8'), /architecture: x86_64/);
    assert.ok((await stat(path.join(target, 'templates'))).isDirectory());
    if (opts.templates) assert.equal(await readFile(path.join(target, 'templates/hostname.tpl'), 'utf8'), 'x\n');
    const root = path.join(target, 'rootfs');
    const owned = await lstat(path.join(root, 'home/user/owned'));
    assert.equal(owned.uid, 1000);
    assert.equal(owned.gid, 1001);
    assert.equal(owned.mode & 0o7777, 0o4750, 'setuid and mode kept');
    assert.equal((await lstat(path.join(root, 'home/user'))).uid, 1000);
    assert.equal((await lstat(path.join(root, 'tmp'))).mode & 0o7777, 0o1777, 'sticky bit kept');
    assert.equal(await readlink(path.join(root, 'bin/sh')), 'busybox');
    assert.equal(await readlink(path.join(root, 'bin/ls')), '/bin/busybox', 'absolute symlinks are kept, not followed');
    const a = await lstat(path.join(root, 'bin/busybox'));
    const b = await lstat(path.join(root, 'bin/busybox.hard'));
    assert.equal(a.ino, b.ino, 'hardlinks stay hardlinks');
    assert.equal(a.mode & 0o111, 0o111);
    const dev = await lstat(path.join(root, 'dev/null'));
    assert.ok(dev.isCharacterDevice(), 'device nodes are created');
    assert.equal(dev.rdev, (await stat('/dev/null')).rdev);
  }

  it('a unified tarball made by packImage (xz) is inspected and unpacked with everything kept', async () => {
    const file = path.join(dir, 'unified.tar.xz');
    await packImage({ source: src, output: file, compression: 'xz' });
    const inspected = await inspectImage({ meta: file });
    assert.equal(inspected.metaFormat, 'xz');
    assert.deepEqual(inspected.metadata.properties, { os: 'busybox' });
    const target = path.join(dir, 'out-unified');
    await unpackImage({ files: { meta: file }, target });
    await checkTree(target, { templates: true });
  });

  it('a split image (metadata tarball + rootfs tarball) is unpacked into target/rootfs', async () => {
    const meta = path.join(dir, 'meta.tar.gz');
    // zstd is optional on Debian: xz where it is missing.
    const zstd = await runCommand('zstd', ['--version']).then(
      () => true,
      () => false,
    );
    const rootfs = path.join(dir, zstd ? 'rootfs.tar.zst' : 'rootfs.tar.xz');
    await runCommand('tar', ['--create', '--gzip', '--file', meta, '--directory', src, 'metadata.yaml']);
    await runCommand('tar', [
      '--create',
      zstd ? '--zstd' : '--xz',
      '--numeric-owner',
      '--file',
      rootfs,
      '--directory',
      path.join(src, 'rootfs'),
      '.',
    ]);
    const inspected = await inspectImage({ meta, rootfs });
    assert.equal(inspected.rootfsFormat, zstd ? 'zstd' : 'xz');
    const target = path.join(dir, 'out-split');
    await unpackImage({ files: { meta, rootfs }, target });
    await checkTree(target, { templates: false });
  });

  it('a split image with a squashfs rootfs is unpacked with unsquashfs', {
    skip: hasUnsquashfs ? undefined : 'unsquashfs (squashfs-tools) is not installed',
  }, async () => {
    const meta = path.join(dir, 'meta.tar');
    const rootfs = path.join(dir, 'rootfs.squashfs');
    await runCommand('tar', ['--create', '--file', meta, '--directory', src, 'metadata.yaml', 'templates']);
    await runCommand('mksquashfs', [path.join(src, 'rootfs'), rootfs, '-noappend', '-quiet', '-no-progress']);
    assert.equal((await inspectImage({ meta, rootfs })).rootfsFormat, 'squashfs');
    const target = path.join(dir, 'out-squashfs');
    await unpackImage({ files: { meta, rootfs }, target });
    await checkTree(target, { templates: true });
  });

  it('metadata.yaml may come after rootfs/ and carry a ./ prefix', async () => {
    const file = path.join(dir, 'dot.tar.bz2');
    await runCommand('tar', [
      '--create',
      '--bzip2',
      '--numeric-owner',
      '--file',
      file,
      '--directory',
      src,
      './rootfs',
      './templates',
      './metadata.yaml',
    ]);
    const inspected = await inspectImage({ meta: file });
    assert.equal(inspected.metaFormat, 'bzip2');
    assert.equal(inspected.metadata.architecture, 'x86_64');
    const target = path.join(dir, 'out-dot');
    await unpackImage({ files: { meta: file }, target });
    await checkTree(target, { templates: true });
  });

  it('inspectImage refuses what is not an image', async () => {
    const garbage = path.join(dir, 'garbage');
    await writeFile(garbage, Buffer.alloc(4096, 0x41));
    await assert.rejects(inspectImage({ meta: garbage }), InvalidImageError);
    const rootOnly = path.join(dir, 'rootonly.tar');
    await runCommand('tar', ['--create', '--file', rootOnly, '--directory', src, 'rootfs']);
    await assert.rejects(inspectImage({ meta: rootOnly }), /metadata\.yaml is missing/);
    const truncated = path.join(dir, 'truncated.tar.xz');
    const full = await readFile(path.join(dir, 'unified.tar.xz'));
    await writeFile(truncated, full.subarray(0, 200));
    await assert.rejects(inspectImage({ meta: truncated }), InvalidImageError);
  });
});
