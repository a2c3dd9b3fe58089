/** The busybox test image builder: tarball layout, ownership, symlinks, metadata and LXD fingerprints. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { runCommand } from '../../src/host/exec.ts';
import { BUSYBOX, buildBusyboxImage, busyboxVersion } from '../support/busybox-image.ts';

const skip = await access(BUSYBOX).then(
  () => (process.getuid?.() === 0 ? undefined : 'building the image needs root (root-owned files)'),
  () => `${BUSYBOX} is missing`,
);
if (skip) console.log(`# skipping busybox image tests: ${skip}`);

const sha256 = (...bufs: Buffer[]) => createHash('sha256').update(Buffer.concat(bufs)).digest('hex');

/** `tar -tv` rows: mode, owner/group, path, symlink target. */
async function listing(file: string): Promise<Array<{ mode: string; owner: string; path: string; link?: string }>> {
  const out = await runCommand('tar', ['--numeric-owner', '-tvf', file]);
  return out.split('\n').map((l) => {
    const m = /^(\S+)\s+(\S+)\s+\d+\s+\S+\s+\S+\s+(.+?)(?: -> (.+))?$/.exec(l);
    assert.ok(m, l);
    return { mode: m[1]!, owner: m[2]!, path: m[3]!, ...(m[4] ? { link: m[4] } : {}) };
  });
}

describe('busybox test image', { skip }, () => {
  let dir = '';
  let version = '';
  before(async () => {
    dir = await mkdtemp('/tmp/svcd-busybox-image-');
    version = await busyboxVersion();
  });
  after(async () => {
    if (dir.startsWith('/tmp/svcd-busybox-image-')) await rm(dir, { recursive: true, force: true });
  });

  it('unified gzip tarball: metadata.yaml, templates/, rootfs/ owned by root; fingerprint = sha256 of the file', async () => {
    const img = await buildBusyboxImage({
      dir: `${dir}/unified`,
      format: 'unified',
      compression: 'gzip',
      creationDate: 1700000000,
    });
    assert.equal(img.format, 'unified');
    if (img.format !== 'unified') return;
    assert.match(img.file, /\.tar\.gz$/);
    assert.equal(img.fingerprint, sha256(await readFile(img.file)));
    const rows = await listing(img.file);
    const paths = new Map(rows.map((r) => [r.path.replace(/\/$/, ''), r]));
    for (const p of [
      'metadata.yaml',
      'templates/hostname.tpl',
      'rootfs/bin/busybox',
      'rootfs/etc/inittab',
      'rootfs/etc/passwd',
      'rootfs/etc/group',
      'rootfs/etc/hostname',
      'rootfs/etc/hosts',
    ]) {
      assert.ok(paths.has(p), p);
    }
    for (const d of [
      'rootfs/dev',
      'rootfs/proc',
      'rootfs/sys',
      'rootfs/run',
      'rootfs/var',
      'rootfs/root',
      'rootfs/tmp',
    ])
      assert.match(paths.get(d)?.mode ?? '', /^d/, d);
    assert.equal(paths.get('rootfs/tmp')?.mode, 'drwxrwxrwt');
    assert.equal(paths.get('rootfs/sbin/init')?.link, '../bin/busybox');
    assert.equal(paths.get('rootfs/bin/sh')?.link, 'busybox');
    assert.ok(
      rows.every((r) => r.owner === '0/0'),
      'every entry is root-owned',
    );
    const applets = (await runCommand(BUSYBOX, ['--list'])).split('\n').filter((a) => a && a !== 'busybox');
    assert.ok(applets.every((a) => paths.get(`rootfs/bin/${a}`)?.link === 'busybox'));

    const meta = parse(await runCommand('tar', ['-xOzf', img.file, 'metadata.yaml']));
    assert.deepEqual(meta, {
      architecture: img.metadata.architecture,
      creation_date: 1700000000,
      properties: { os: 'busybox', release: version, description: `BusyBox ${version} (svcd test image)` },
      templates: { '/etc/hostname': { when: ['create', 'copy'], template: 'hostname.tpl' } },
    });
    if (process.arch === 'x64') assert.equal(meta.architecture, 'x86_64');
    assert.match(await runCommand('tar', ['-xOzf', img.file, 'rootfs/etc/inittab']), /^::shutdown:\/bin\/umount -a$/m);
  });

  it('split uncompressed pair: metadata tarball + rootfs tarball; fingerprint = sha256(metadata bytes + rootfs bytes)', async () => {
    const img = await buildBusyboxImage({ dir: `${dir}/split`, format: 'split', compression: 'none' });
    assert.equal(img.format, 'split');
    if (img.format !== 'split') return;
    assert.match(img.metadataFile, /\.tar$/);
    const [meta, rootfs] = [await readFile(img.metadataFile), await readFile(img.rootfsFile)];
    assert.equal(img.fingerprint, sha256(meta, rootfs));
    assert.notEqual(img.fingerprint, sha256(rootfs, meta));
    const metaPaths = (await listing(img.metadataFile)).map((r) => r.path);
    assert.deepEqual(metaPaths.sort(), ['metadata.yaml', 'templates/', 'templates/hostname.tpl']);
    const rootPaths = new Map(
      (await listing(img.rootfsFile)).map((r) => [r.path.replace(/^\.\//, '').replace(/\/$/, ''), r]),
    );
    assert.equal(rootPaths.get('sbin/init')?.link, '../bin/busybox');
    assert.ok(rootPaths.has('bin/busybox') && rootPaths.has('etc/inittab'));
    assert.ok(
      ![...rootPaths.keys()].some((p) => p.startsWith('rootfs/')),
      'the rootfs tarball holds the tree at its top',
    );
  });
});
