import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { InvalidImageError } from './errors.ts';
import { memberNameProblem, scanTarball } from './scan-tarball.ts';

interface Member {
  path: string;
  type?: string;
  data?: string;
  linkpath?: string;
}

/** A tarball built block by block (node-tar's header encoder), with or without its end-of-archive marker. */
function tarball(members: Member[], end = true): Buffer {
  const blocks: Buffer[] = [];
  for (const m of members) {
    const data = Buffer.from(m.data ?? '');
    const h = new Header({
      path: m.path,
      type: (m.type ?? 'File') as 'File',
      size: data.length,
      mode: 0o644,
      uid: 0,
      gid: 0,
      mtime: new Date(0),
      ...(m.linkpath ? { linkpath: m.linkpath } : {}),
    });
    h.encode();
    blocks.push(h.block!);
    if (data.length) blocks.push(Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]));
  }
  if (end) blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

const META = { path: 'metadata.yaml', data: 'architecture: x86_64\ncreation_date: 1700000000\n' };
const GOOD: Member[] = [
  META,
  { path: 'rootfs/', type: 'Directory' },
  { path: 'rootfs/bin/', type: 'Directory' },
  { path: 'rootfs/bin/busybox', data: 'x'.repeat(1500) },
  { path: 'rootfs/bin/sh', type: 'Link', linkpath: 'rootfs/bin/busybox' },
  { path: 'rootfs/lib', type: 'SymbolicLink', linkpath: '/usr/lib' },
  { path: 'rootfs/sbin', type: 'SymbolicLink', linkpath: 'bin' },
  { path: 'rootfs/sbin', type: 'Directory' },
  { path: 'rootfs/sbin/init', type: 'SymbolicLink', linkpath: '/bin/busybox' },
  { path: 'rootfs/dev/', type: 'Directory' },
  { path: 'rootfs/dev/null', type: 'CharacterDevice' },
];

describe('scanTarball reads the whole tarball and refuses what GNU tar would not extract', () => {
  let dir: string;
  before(async () => (dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-scan-'))));
  after(async () => rm(dir, { recursive: true, force: true }));

  let n = 0;
  const scan = async (bytes: Buffer, gzip = false) => {
    const file = path.join(dir, `t${n++}`);
    await writeFile(file, gzip ? gzipSync(bytes) : bytes);
    return scanTarball(file, gzip ? 'gzip' : 'none', 'image tarball');
  };
  const refused = async (bytes: Buffer, message: RegExp, gzip = false) => {
    const e = await scan(bytes, gzip).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(e instanceof InvalidImageError, `refused with an InvalidImageError, got ${String(e)}`);
    assert.match(e.message, message);
  };

  it('a complete image: metadata.yaml read, rootfs seen, every member counted (plain and gzip)', async () => {
    for (const gzip of [false, true]) {
      const s = await scan(tarball(GOOD), gzip);
      assert.equal(s.metadataYaml, META.data);
      assert.equal(s.hasRootfs, true);
      assert.equal(s.entries, GOOD.length);
    }
  });

  it('a tarball cut short anywhere is refused: inside a member, inside a header, before its end marker, mid-gzip', async () => {
    const full = tarball(GOOD);
    // Inside busybox's data (header blocks: metadata, its data, rootfs/, bin/, busybox's header, then data).
    await refused(full.subarray(0, 512 * 6 + 700), /cut short/);
    await refused(full.subarray(0, 512 * 6 + 1024), /cut short/);
    // Inside a header block.
    await refused(full.subarray(0, 512 * 2 + 100), /cut short/);
    // At a member boundary, without the end-of-archive marker.
    await refused(tarball(GOOD, false), /no end-of-archive marker/);
    const gz = gzipSync(full);
    const file = path.join(dir, 'cut.tar.gz');
    await writeFile(file, gz.subarray(0, gz.length - 40));
    await assert.rejects(
      scanTarball(file, 'gzip', 'image tarball'),
      (e: Error) => e instanceof InvalidImageError && /cut short or corrupt/.test(e.message),
    );
  });

  it('members GNU tar refuses or that would escape are refused, naming the member', async () => {
    await refused(
      tarball([META, { path: 'rootfs/../../etc/passwd', data: 'x' }]),
      /member "rootfs\/\.\.\/\.\.\/etc\/passwd" contains '\.\.'/,
    );
    await refused(tarball([META, { path: '/etc/passwd', data: 'x' }]), /member "\/etc\/passwd" is an absolute path/);
    await refused(
      tarball([META, { path: 'rootfs/bin/sh', type: 'Link', linkpath: 'rootfs/bin/busybox' }]),
      /hard link "rootfs\/bin\/sh" points at "rootfs\/bin\/busybox", which is not an earlier file/,
    );
    await refused(tarball([META, { path: 'rootfs/x', type: 'Link', linkpath: '../../etc/shadow' }]), /contains '\.\.'/);
    await refused(
      tarball([
        META,
        { path: 'rootfs/etc', type: 'SymbolicLink', linkpath: '/etc' },
        { path: 'rootfs/etc/passwd', data: 'x' },
      ]),
      /member "rootfs\/etc\/passwd" lies under the symbolic link "rootfs\/etc"/,
    );
    await refused(
      tarball([META, { path: 'rootfs/sparse', type: 'SparseFile' }]),
      /type svcd does not accept \(SparseFile\)/,
    );
    await refused(
      tarball([{ ...META, type: 'SymbolicLink', data: '', linkpath: '/etc/passwd' }]),
      /metadata\.yaml is not a regular file/,
    );
  });

  it('not a tarball at all', async () => {
    await refused(Buffer.alloc(4096, 0x41), /Invalid image tarball/);
  });

  it('member names: relative without .. are fine', () => {
    assert.equal(memberNameProblem('./'), undefined);
    assert.equal(memberNameProblem('./rootfs/etc/hosts'), undefined);
    assert.equal(memberNameProblem('rootfs/a..b'), undefined);
    assert.equal(memberNameProblem('rootfs/..'), "contains '..'");
    assert.equal(memberNameProblem('/x'), 'is an absolute path');
  });
});
