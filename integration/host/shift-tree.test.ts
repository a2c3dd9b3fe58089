import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { shiftRules, shiftTree } from '../../src/host/migration/shift-tree.ts';

// A tree as LXD leaves it on disk (owned by its host ids, base 1000000), shifted to container ids.
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'shift-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));
const map = [
  { isuid: true, isgid: false, hostid: 1000000, nsid: 0, maprange: 65536 },
  { isuid: false, isgid: true, hostid: 1000000, nsid: 0, maprange: 65536 },
];
const py = (code: string, ...args: string[]) => execFileSync('python3', ['-c', code, ...args], { encoding: 'utf8' });
// security.capability v3: magic (revision 3 | effective), permitted/inheritable x2, rootid
const capV3 = (rootid: number) => {
  const b = Buffer.alloc(24);
  b.writeUInt32LE(0x03000001, 0);
  b.writeUInt32LE(1 << 10, 4); // CAP_NET_BIND_SERVICE
  b.writeUInt32LE(rootid, 20);
  return b.toString('hex');
};

test('shiftRules: one rule per differing uid or gid range, none for an identity or empty map', () => {
  assert.deepEqual(shiftRules(map), ['u:1000000:0:65536', 'g:1000000:0:65536']);
  assert.deepEqual(shiftRules([{ isuid: true, isgid: true, hostid: 0, nsid: 0, maprange: 65536 }]), []);
  assert.deepEqual(shiftRules([]), []);
});

test('owners, set-id bits, ACL entries and a v3 capability move to container ids; other ids stay', async () => {
  const t = path.join(root, 'rootfs');
  fs.mkdirSync(path.join(t, 'home/u'), { recursive: true });
  fs.writeFileSync(path.join(t, 'su'), 'x');
  fs.writeFileSync(path.join(t, 'ping'), 'x');
  fs.writeFileSync(path.join(t, 'outside'), 'x');
  fs.symlinkSync('su', path.join(t, 'link'));
  for (const p of ['', 'home', 'su', 'ping']) fs.chownSync(path.join(t, p), 1000000, 1000000);
  fs.chownSync(path.join(t, 'home/u'), 1001000, 1001000);
  fs.lchownSync(path.join(t, 'link'), 1000033, 1000044);
  fs.chmodSync(path.join(t, 'su'), 0o4755);
  fs.chownSync(path.join(t, 'outside'), 5, 6);
  py(
    'import os,sys; os.setxattr(sys.argv[1], "security.capability", bytes.fromhex(sys.argv[2]))',
    path.join(t, 'ping'),
    capV3(1000000),
  );
  execFileSync('setfacl', ['-m', 'u:1001000:rwx,g:1001000:rx', path.join(t, 'home/u')]);
  execFileSync('setfacl', ['-d', '-m', 'u:1001000:rwx', path.join(t, 'home/u')]);

  const changed = await shiftTree(t, map);
  assert.equal(changed, 6);
  const own = (p: string) => {
    const s = fs.lstatSync(path.join(t, p));
    return [s.uid, s.gid];
  };
  assert.deepEqual(own(''), [0, 0]);
  assert.deepEqual(own('su'), [0, 0]);
  assert.deepEqual(own('home/u'), [1000, 1000]);
  assert.deepEqual(own('link'), [33, 44]);
  assert.deepEqual(own('outside'), [5, 6], 'an id no rule covers stays');
  assert.equal(fs.statSync(path.join(t, 'su')).mode & 0o7777, 0o4755, 'chown cleared set-uid; it is back');
  const cap = py(
    'import os,sys; print(os.getxattr(sys.argv[1], "security.capability").hex())',
    path.join(t, 'ping'),
  ).trim();
  // root id 0: written as v2 (20 bytes, revision 2, effective kept, same permitted set)
  const v2 = Buffer.alloc(20);
  v2.writeUInt32LE(0x02000001, 0);
  v2.writeUInt32LE(1 << 10, 4);
  assert.equal(cap, v2.toString('hex'));
  const acl = execFileSync('getfacl', ['-n', '-p', path.join(t, 'home/u')], { encoding: 'utf8' });
  assert.match(acl, /^user:1000:rwx$/m);
  assert.match(acl, /^group:1000:r-x$/m);
  assert.match(acl, /^default:user:1000:rwx$/m);
  // a second run finds nothing to do
  assert.equal(await shiftTree(t, map), 0);
});
