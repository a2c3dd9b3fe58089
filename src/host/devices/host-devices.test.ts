import assert from 'node:assert/strict';
import { chmod, lstat, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ensureDeviceNode } from './ensure-device-node.ts';
import { readDeviceNode, splitDevT } from './read-device-node.ts';
import { readHostLink } from './read-host-link.ts';
import { canSearch, findUnsearchableDir, readPathKind } from './read-host-path.ts';

let tmp = '';
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'svcd-hostdev-'));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

test('dev_t split: classic 8-bit and large major/minor encodings', () => {
  assert.deepEqual(splitDevT(0x0ac8n), { major: 10, minor: 200 }); // /dev/net/tun
  assert.deepEqual(splitDevT(0x0707n), { major: 7, minor: 7 });
  // major 259, minor 300: minor low byte in bits 0-7, high bits from bit 20; major bits 8-19
  const rdev = (259n << 8n) | (300n & 0xffn) | ((300n & ~0xffn) << 12n);
  assert.deepEqual(splitDevT(rdev), { major: 259, minor: 300 });
});

test('device nodes as the host shows them', async () => {
  assert.deepEqual(await readDeviceNode('/dev/null'), { type: 'char', major: 1, minor: 3 });
  assert.deepEqual(await readDeviceNode('/etc/hostname'), { type: 'other' });
  assert.equal(await readDeviceNode('/dev/svcd-no-such-node'), undefined);
});

test('search permission by owner, group, other', () => {
  const dir = (mode: number, uid = 0, gid = 0) => ({ mode, uid, gid });
  assert.equal(canSearch(dir(0o711), 1000000, 1000000), true);
  assert.equal(canSearch(dir(0o700), 1000000, 1000000), false);
  assert.equal(canSearch(dir(0o710, 0, 1000000), 1000000, 1000000), true);
  assert.equal(canSearch(dir(0o007, 1000000, 0), 1000000, 1000000), false, 'the owner class decides, not other');
  assert.equal(canSearch(dir(0o100, 1000000, 0), 1000000, 1000000), true);
});

test('the first unsearchable directory on the way to a path; path kinds', async () => {
  const a = path.join(tmp, 'a');
  await mkdir(path.join(a, 'b'), { recursive: true });
  await writeFile(path.join(a, 'b', 'f'), 'x');
  await chmod(tmp, 0o711);
  await chmod(a, 0o700);
  assert.deepEqual(await findUnsearchableDir(path.join(a, 'b', 'f'), 1000000, 1000000), { dir: a, mode: 0o700 });
  await chmod(a, 0o755);
  assert.equal(await findUnsearchableDir(path.join(a, 'b', 'f'), 1000000, 1000000), undefined);
  assert.equal(await readPathKind(a), 'dir');
  assert.equal(await readPathKind(path.join(a, 'b', 'f')), 'file');
  assert.equal(await readPathKind(path.join(a, 'nope')), undefined);
});

test('host links from a /sys tree', async () => {
  const sys = path.join(tmp, 'sys');
  await mkdir(path.join(sys, 'class/net/br0/bridge'), { recursive: true });
  await mkdir(path.join(sys, 'class/net/eth0'), { recursive: true });
  assert.equal(await readHostLink('br0', { sysRoot: sys }), 'bridge');
  assert.equal(await readHostLink('eth0', { sysRoot: sys }), 'other');
  assert.equal(await readHostLink('nope', { sysRoot: sys }), undefined);
  assert.equal(await readHostLink('../../etc', { sysRoot: sys }), undefined);
});

test('ensureDeviceNode creates, keeps and replaces a node (root only)', {
  skip: process.getuid?.() !== 0 ? 'mknod needs root' : false,
}, async () => {
  const node = path.join(tmp, 'unix.tun');
  const spec = { path: node, type: 'char' as const, major: 10, minor: 200, mode: 0o660, uid: 1000000, gid: 1000001 };
  await ensureDeviceNode(spec);
  const st = await lstat(node);
  assert.ok(st.isCharacterDevice());
  assert.deepEqual([st.mode & 0o7777, st.uid, st.gid], [0o660, 1000000, 1000001]);
  assert.deepEqual(await readDeviceNode(node), { type: 'char', major: 10, minor: 200 });
  await ensureDeviceNode(spec);
  assert.equal((await lstat(node)).ino, st.ino, 'an identical node is left alone');
  await ensureDeviceNode({ ...spec, mode: 0o600, uid: 0, gid: 0 });
  const st2 = await lstat(node);
  assert.notEqual(st2.ino, st.ino);
  assert.deepEqual([st2.mode & 0o7777, st2.uid, st2.gid], [0o600, 0, 0]);
  await rm(node);
  await symlink('/dev/null', node);
  await ensureDeviceNode(spec);
  assert.ok((await lstat(node)).isCharacterDevice(), 'a symlink in the way is replaced');
});
