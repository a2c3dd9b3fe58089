import assert from 'node:assert/strict';
import { link, lstat, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { existsInRoot, resolveInRoot, writeInRoot } from './write-in-root.ts';

let base: string;
let root: string;
let outside: string;
before(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'svcd-inroot-'));
  root = path.join(base, 'rootfs');
  outside = path.join(base, 'outside');
  await mkdir(path.join(root, 'etc'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret'), 'host secret\n');
});
after(() => rm(base, { recursive: true, force: true }));

test("writes a new file 0644, creating missing directories; keeps an existing file's mode", async () => {
  await writeInRoot(root, '/etc/hostname', 'web1\n');
  assert.equal(await readFile(path.join(root, 'etc/hostname'), 'utf8'), 'web1\n');
  assert.equal((await stat(path.join(root, 'etc/hostname'))).mode & 0o777, 0o644);
  await writeInRoot(root, '/opt/app/conf.d/x.conf', 'x');
  assert.equal((await stat(path.join(root, 'opt/app/conf.d'))).mode & 0o777, 0o755);
  await writeFile(path.join(root, 'etc/motd'), 'old', { mode: 0o600 });
  await writeInRoot(root, '/etc/motd', 'new');
  assert.equal(await readFile(path.join(root, 'etc/motd'), 'utf8'), 'new');
  assert.equal((await stat(path.join(root, 'etc/motd'))).mode & 0o777, 0o600);
  assert.ok(await existsInRoot(root, '/etc/motd'));
  assert.ok(!(await existsInRoot(root, '/etc/nothing')));
  assert.ok(!(await existsInRoot(root, '/nodir/nothing')));
});

test('symlinks are resolved inside the rootfs: absolute, relative and .. links never leave it', async () => {
  // An absolute link to a host path lands on the same path inside the rootfs.
  await symlink(path.join(outside, 'secret'), path.join(root, 'etc/abs'));
  await writeInRoot(root, '/etc/abs', 'A');
  assert.equal(await readFile(path.join(outside, 'secret'), 'utf8'), 'host secret\n');
  assert.equal(await readFile(path.join(root, outside, 'secret'), 'utf8'), 'A');
  // A relative link climbing above the root stops at the root.
  await symlink('../../../../../../outside', path.join(root, 'etc/up'));
  await writeInRoot(root, '/etc/up/secret', 'B');
  assert.equal(await readFile(path.join(outside, 'secret'), 'utf8'), 'host secret\n');
  assert.equal(await readFile(path.join(root, 'outside/secret'), 'utf8'), 'B');
  // A directory link inside the rootfs is followed (as the container sees it).
  await mkdir(path.join(root, 'run'));
  await symlink('/run', path.join(root, 'var-run'));
  await writeInRoot(root, '/var-run/x.pid', '1');
  assert.equal(await readFile(path.join(root, 'run/x.pid'), 'utf8'), '1');
  assert.equal(await resolveInRoot(root, '/var-run/x.pid', false), path.join(root, 'run/x.pid'));
  // Loops end.
  await symlink('loop2', path.join(root, 'loop1'));
  await symlink('loop1', path.join(root, 'loop2'));
  await assert.rejects(writeInRoot(root, '/loop1', 'x'), /too many levels/);
  await assert.rejects(writeInRoot(root, '/', 'x'), /root directory/);
  await symlink('/', path.join(root, 'toroot'));
  await assert.rejects(writeInRoot(root, '/toroot', 'x'), /root directory/);
});

test('a file with other hard links is replaced, not written through', async () => {
  await writeFile(path.join(outside, 'linked'), 'outside\n', { mode: 0o640 });
  await link(path.join(outside, 'linked'), path.join(root, 'etc/linked'));
  await writeInRoot(root, '/etc/linked', 'inside\n');
  assert.equal(await readFile(path.join(outside, 'linked'), 'utf8'), 'outside\n');
  assert.equal(await readFile(path.join(root, 'etc/linked'), 'utf8'), 'inside\n');
  const st = await stat(path.join(root, 'etc/linked'));
  assert.deepEqual([st.nlink, st.mode & 0o777], [1, 0o640]);
});

test('a directory, or a file where a directory is needed, is refused', async () => {
  await assert.rejects(writeInRoot(root, '/etc', 'x'), /not a regular file/);
  await assert.rejects(writeInRoot(root, '/etc/hostname/x', 'x'), /not a directory/);
  assert.ok((await lstat(path.join(root, 'etc'))).isDirectory());
});
