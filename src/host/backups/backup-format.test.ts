import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { BACKUP_COMPRESSION } from '../../desired/server-config.ts';
import { TAR_COMPRESS_FLAG, tarCompressFlag } from '../images/detect-compression.ts';
import { backupTarArgs, unpackTarArgs } from './backup-tarball.ts';
import { readBackupFormat, sniffBackupFormat } from './backup-format.ts';
import { InvalidBackupError } from './errors.ts';

const work = mkdtempSync(path.join(os.tmpdir(), 'svcd-backup-format-'));
after(() => rmSync(work, { recursive: true, force: true }));

const head = (...bytes: number[]) => Uint8Array.from([...bytes, ...new Array(16).fill(0)]);
const plainTar = () => {
  const b = new Uint8Array(512);
  b.set(Buffer.from('backup/'), 0);
  b.set(Buffer.from('ustar\0'), 257);
  return b;
};

test('sniffBackupFormat: each magic, and a 400 for anything else', () => {
  assert.equal(sniffBackupFormat(head(0x1f, 0x8b, 0x08)), 'gzip');
  assert.equal(sniffBackupFormat(head(0x42, 0x5a, 0x68, 0x39)), 'bzip2');
  assert.equal(sniffBackupFormat(head(0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00)), 'xz');
  assert.equal(sniffBackupFormat(head(0x28, 0xb5, 0x2f, 0xfd)), 'zstd');
  assert.equal(sniffBackupFormat(plainTar()), 'none');
  for (const bad of [
    head(0x68, 0x73, 0x71, 0x73),
    head(0x50, 0x4b, 0x03, 0x04),
    Uint8Array.from(Buffer.from('not a tarball')),
    new Uint8Array(0),
    head(0xfd, 0x37, 0x7a, 0x58),
  ])
    assert.throws(
      () => sniffBackupFormat(bad),
      (e: Error) => e instanceof InvalidBackupError && /not a \(compressed\) tarball/.test(e.message),
    );
});

test('readBackupFormat: what GNU tar and its compressors write is recognised, whatever the file is called', async () => {
  const src = path.join(work, 'src');
  mkdirSync(path.join(src, 'backup'), { recursive: true });
  writeFileSync(path.join(src, 'backup/index.yaml'), 'name: c1\n');
  for (const format of BACKUP_COMPRESSION) {
    const out = path.join(work, `b-${format}.bin`);
    execFileSync('tar', ['--create', '--file', out, ...tarCompressFlag(format), '--directory', src, 'backup']);
    assert.equal(await readBackupFormat(out), format);
    // The same flag reads it back.
    assert.equal(
      execFileSync('tar', ['--list', '--file', out, ...tarCompressFlag(format)], { encoding: 'utf8' }).split('\n')[0],
      'backup/',
    );
  }
  const empty = path.join(work, 'empty');
  writeFileSync(empty, '');
  await assert.rejects(readBackupFormat(empty), InvalidBackupError);
  await assert.rejects(readBackupFormat(path.join(work, 'absent')), InvalidBackupError);
  assert.ok(readFileSync(path.join(work, 'b-none.bin')).subarray(257, 262).toString() === 'ustar');
});

test('every backup compression the server accepts has a tar flag; an unknown one throws rather than falling back to gzip', () => {
  for (const c of BACKUP_COMPRESSION) assert.ok(Object.hasOwn(TAR_COMPRESS_FLAG, c), c);
  assert.deepEqual(
    BACKUP_COMPRESSION.map((c) => tarCompressFlag(c)),
    [[], ['--gzip'], ['--bzip2'], ['--xz'], ['--zstd']],
  );
  for (const bad of ['foo', 'squashfs', 'toString', '__proto__', ''])
    assert.throws(() => tarCompressFlag(bad), RangeError, bad);
});

test('backupTarArgs and unpackTarArgs name the compressor (golden)', () => {
  const base = {
    output: '/b/1.tar.partial',
    indexDir: '/tmp/i',
    volumePath: '/pool/containers/v1',
    members: ['rootfs'],
  };
  assert.deepEqual(backupTarArgs({ ...base, compression: 'xz' }), [
    '--create',
    '--file',
    '/b/1.tar.partial',
    '--force-local',
    '--sort=name',
    '--numeric-owner',
    '--xattrs',
    '--xattrs-include=*',
    '--xz',
    '--transform',
    's,^\\(rootfs\\|metadata\\.yaml\\|templates\\),backup/container/\\1,rhS',
    '--directory',
    '/tmp/i',
    'backup/index.yaml',
    'backup/container/backup.yaml',
    '--directory',
    '/pool/containers/v1',
    'rootfs',
  ]);
  assert.ok(!backupTarArgs({ ...base, compression: 'none' }).some((a) => /^--(gzip|xz|bzip2|zstd|lzma)$/.test(a)));
  assert.ok(backupTarArgs({ ...base, compression: 'zstd' }).includes('--zstd'));
  assert.throws(() => backupTarArgs({ ...base, compression: 'lzma2' }), RangeError);
  assert.deepEqual(unpackTarArgs('/i/x', '/t', {}, 'bzip2'), [
    '--extract',
    '--file',
    '/i/x',
    '--force-local',
    '--bzip2',
    '--directory',
    '/t',
    '--numeric-owner',
    '--same-owner',
    '--same-permissions',
    '--xattrs',
    '--xattrs-include=*',
    '--strip-components=2',
    '--no-wildcards',
    '--',
    'backup/container',
  ]);
  assert.equal(
    unpackTarArgs('/i/x', '/t', {}, 'none').filter((a) => a.startsWith('--') && /zip|xz|zstd/.test(a)).length,
    0,
  );
});
