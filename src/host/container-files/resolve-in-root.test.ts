import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { HostInputError as ValidationError, HostNotFoundError as NotFoundError } from '../errors.ts';
import { fsError, makeDirectory, makeSymlink, readEntry, removeEntry, writeFile } from './file-ops.ts';
import { fdPath, openRoot, resolveParent } from './resolve-in-root.ts';
import {
  idmappedSources,
  openRootfsView,
  parseIdMap,
  parseLxcIdmap,
  pseudoFsGuard,
  toInside,
  toView,
  type ContainerFs,
} from './views.ts';

/**
 * A fake container root in a temp dir with hostile symlinks planted, and an "outside" directory
 * next to it standing for the host: nothing may ever be read from or written to `outside`.
 */
let base: string;
let root: string;
let outside: string;
let fsys: ContainerFs;

/** This process's fds into the test tree (not the runner's own, which come and go on their own). */
const openFds = () =>
  fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(base);
    } catch {
      return false;
    }
  }).length;
const realPathOf = (fd: number) => fs.readlinkSync(fdPath(fd));
const chunks = (...parts: string[]) =>
  (async function* () {
    for (const p of parts) yield Buffer.from(p);
  })();

before(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'svcd-resolve-'));
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  fs.mkdirSync(path.join(root, 'etc'), { recursive: true });
  fs.mkdirSync(path.join(root, 'a/b/c'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(root, 'etc/shadow'), 'container shadow');
  fs.writeFileSync(path.join(outside, 'secret'), 'HOST SECRET');
  fs.symlinkSync('/etc', path.join(root, 'abs-etc'));
  fs.symlinkSync('../../../../../../../../../../..', path.join(root, 'a/up'));
  fs.symlinkSync('../outside', path.join(root, 'to-outside'));
  fs.symlinkSync(outside, path.join(root, 'host-abs'));
  fs.symlinkSync('loop2', path.join(root, 'loop1'));
  fs.symlinkSync('loop1', path.join(root, 'loop2'));
  fs.symlinkSync('b/c', path.join(root, 'a/rel'));
  fs.writeFileSync(path.join(root, 'a/file'), 'x');
  fsys = openRootfsView(root);
});
after(() => {
  fsys.close();
  fs.rmSync(base, { recursive: true, force: true });
});

describe('resolveParent: in-root resolution', () => {
  const parentOf = (p: string) => {
    const r = resolveParent(fsys.main.root, p);
    try {
      return { dir: path.relative(root, realPathOf(r.dir)) || '/', name: r.name };
    } finally {
      r.close();
    }
  };

  test('plain paths, `.` and `..` clamped at the root, final component untouched', () => {
    assert.deepEqual(parentOf('/a/b/c'), { dir: 'a/b', name: 'c' });
    assert.deepEqual(parentOf('/'), { dir: '/', name: undefined });
    assert.deepEqual(parentOf('/../../../etc/shadow'), { dir: 'etc', name: 'shadow' });
    assert.deepEqual(parentOf('/a/b/../../../../a/./b/.'), { dir: 'a/b', name: undefined });
    assert.deepEqual(parentOf('/a//b///c/'), { dir: 'a/b', name: 'c' });
    // The final component is never followed, even when it is a symlink out of the root.
    assert.deepEqual(parentOf('/host-abs'), { dir: '/', name: 'host-abs' });
  });

  test('symlinks on the way are followed inside the root only', () => {
    assert.deepEqual(parentOf('/abs-etc/shadow'), { dir: 'etc', name: 'shadow' });
    assert.deepEqual(parentOf('/a/up/etc/shadow'), { dir: 'etc', name: 'shadow' });
    assert.deepEqual(parentOf('/a/rel/x'), { dir: 'a/b/c', name: 'x' });
    // ../outside from the root is <root>/outside, which does not exist.
    assert.throws(() => parentOf('/to-outside/secret'), NotFoundError);
    // An absolute target naming the host's directory restarts at the container root.
    assert.throws(() => parentOf('/host-abs/secret'), NotFoundError);
  });

  test('loops, non-directories, NUL are refused; no fd leaks', () => {
    const before = openFds();
    assert.throws(
      () => parentOf('/loop1/x'),
      (e: unknown) => e instanceof ValidationError && /too many levels/.test(e.message),
    );
    assert.throws(
      () => parentOf('/a/file/x'),
      (e: unknown) => e instanceof ValidationError && /not a directory/.test(e.message),
    );
    assert.deepEqual(parentOf('a/b'), { dir: 'a', name: 'b' }, 'a relative path counts from the root');
    assert.throws(() => parentOf('/a\0b'), ValidationError);
    assert.throws(() => parentOf('/nope/x'), NotFoundError);
    for (let i = 0; i < 50; i++) parentOf('/a/up/a/rel/../../b/c/x');
    assert.equal(openFds(), before);
  });
});

describe('file operations on a rootfs view', () => {
  test('read through hostile symlinks never reaches the outside', async () => {
    const e = await readEntry(fsys, '/abs-etc/shadow');
    assert.equal(e.type, 'file');
    if (e.type !== 'file') return;
    // small: read whole (no handle left open)
    assert.equal(e.handle, undefined);
    assert.equal(e.data?.toString('utf8'), 'container shadow');
    await assert.rejects(readEntry(fsys, '/host-abs/secret'), NotFoundError);
    await assert.rejects(readEntry(fsys, '/a/up/../outside/secret'), NotFoundError);
    const link = await readEntry(fsys, '/host-abs');
    assert.deepEqual(link.type === 'symlink' && link.target, outside);
    const dir = await readEntry(fsys, '/a/up');
    assert.equal(dir.type, 'symlink');
    const top = await readEntry(fsys, '/a/up/');
    assert.equal(top.type, 'symlink', 'a trailing slash does not follow the final symlink either');
  });

  test('write, overwrite keeps owner and mode, append, write through symlinks refused', async () => {
    await writeFile(fsys, '/a/new', { uid: 1234, gid: 2345, mode: 0o640, append: false }, chunks('hello ', 'world'));
    let st = fs.lstatSync(path.join(root, 'a/new'));
    assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [1234, 2345, 0o640]);
    await writeFile(fsys, '/a/new', { append: false }, chunks('again'));
    st = fs.lstatSync(path.join(root, 'a/new'));
    assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [1234, 2345, 0o640]);
    await writeFile(fsys, '/a/new', { append: true }, chunks('+more'));
    assert.equal(fs.readFileSync(path.join(root, 'a/new'), 'utf8'), 'again+more');
    await writeFile(fsys, '/a/appended', { append: true, mode: 0o600 }, chunks('created by an append'));
    assert.equal(fs.readFileSync(path.join(root, 'a/appended'), 'utf8'), 'created by an append');
    assert.equal(fs.statSync(path.join(root, 'a/appended')).mode & 0o7777, 0o600);
    await writeFile(fsys, '/a/fresh', { append: false }, chunks('x'));
    st = fs.lstatSync(path.join(root, 'a/fresh'));
    assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [0, 0, 0o644]);
    // A symlink as the final component: refused, the target outside untouched.
    await assert.rejects(writeFile(fsys, '/host-abs', { append: false }, chunks('pwned')), /is a symlink/);
    await assert.rejects(writeFile(fsys, '/abs-etc/../host-abs', { append: true }, chunks('pwned')), /is a symlink/);
    await assert.rejects(writeFile(fsys, '/a', { append: false }, chunks('x')), /is a directory/);
    await assert.rejects(writeFile(fsys, '/missing/x', { append: false }, chunks('x')), NotFoundError);
    assert.equal(fs.readFileSync(path.join(outside, 'secret'), 'utf8'), 'HOST SECRET');
    assert.deepEqual(fs.readdirSync(outside), ['secret']);
    assert.deepEqual(
      fs.readdirSync(path.join(root, 'a')).filter((n) => n.startsWith('.svcd')),
      [],
      'no temporary file left',
    );
  });

  test('a failed upload leaves the old file and no temporary file', async () => {
    fs.writeFileSync(path.join(root, 'a/keep'), 'old');
    const failing = (async function* () {
      yield Buffer.from('partial');
      throw new Error('client went away');
    })();
    await assert.rejects(writeFile(fsys, '/a/keep', { append: false }, failing), /went away/);
    assert.equal(fs.readFileSync(path.join(root, 'a/keep'), 'utf8'), 'old');
    const failingAppend = (async function* () {
      yield Buffer.from('partial');
      throw new Error('client went away');
    })();
    await assert.rejects(writeFile(fsys, '/a/keep', { append: true }, failingAppend), /went away/);
    assert.equal(fs.readFileSync(path.join(root, 'a/keep'), 'utf8'), 'old');
    assert.deepEqual(
      fs.readdirSync(path.join(root, 'a')).filter((n) => n.startsWith('.svcd')),
      [],
    );
  });

  test('directories, symlinks, delete', async () => {
    makeDirectory(fsys, '/a/d', { uid: 7, gid: 8, mode: 0o711 });
    let st = fs.lstatSync(path.join(root, 'a/d'));
    assert.deepEqual([st.isDirectory(), st.uid, st.gid, st.mode & 0o7777], [true, 7, 8, 0o711]);
    makeDirectory(fsys, '/a/d', {});
    st = fs.lstatSync(path.join(root, 'a/d'));
    assert.deepEqual([st.uid, st.mode & 0o7777], [7, 0o711], 'an existing directory is left as it is');
    assert.throws(() => makeDirectory(fsys, '/a/file', {}), /already exists/);
    makeSymlink(fsys, '/a/d/l', '/etc/shadow', { uid: 5, gid: 6 });
    st = fs.lstatSync(path.join(root, 'a/d/l'));
    assert.deepEqual([st.isSymbolicLink(), st.uid, st.gid], [true, 5, 6]);
    makeSymlink(fsys, '/a/d/l', 'other', {});
    assert.equal(fs.readlinkSync(path.join(root, 'a/d/l')), 'other');
    assert.throws(() => makeSymlink(fsys, '/a/d', 'x', {}), /is a directory/);
    assert.throws(() => removeEntry(fsys, '/a/d'), /not empty/);
    removeEntry(fsys, '/a/d/l');
    removeEntry(fsys, '/a/d');
    assert.equal(fs.existsSync(path.join(root, 'a/d')), false);
    removeEntry(fsys, '/host-abs');
    assert.equal(fs.existsSync(path.join(outside, 'secret')), true, 'deleting a symlink leaves its target');
    assert.throws(() => removeEntry(fsys, '/a/..'), ValidationError);
    assert.throws(() => removeEntry(fsys, '/nope'), NotFoundError);
    fs.symlinkSync(outside, path.join(root, 'host-abs'));
  });

  test('FIFOs and device nodes are refused, never opened', async () => {
    execFileSync('mkfifo', [path.join(root, 'fifo')]);
    await assert.rejects(readEntry(fsys, '/fifo'), /not a regular file/);
    await assert.rejects(writeFile(fsys, '/fifo', { append: true }, chunks('x')), /not a regular file/);
  });
});

test('idmapped host directories from an LXC config: the rootfs and idmap=container mount entries only', () => {
  const config = [
    'lxc.rootfs.path = dir:/pool/c/rootfs',
    'lxc.rootfs.options = idmap=container',
    'lxc.mount.entry = /pool/custom/vol mnt/vol none bind,create=dir,idmap=container 0 0',
    'lxc.mount.entry = /srv/with\\040space srv/x none rbind,create=dir,ro,idmap=container 0 0',
    'lxc.mount.entry = /srv/plain mnt/plain none bind,create=dir 0 0',
    'lxc.mount.entry = /evil ../up none bind,idmap=container 0 0',
  ].join('\n');
  assert.deepEqual(idmappedSources(config, '/pool/c/rootfs'), [
    { mountPath: '/', source: '/pool/c/rootfs' },
    { mountPath: '/mnt/vol', source: '/pool/custom/vol' },
    { mountPath: '/srv/x', source: '/srv/with space' },
  ]);
  assert.deepEqual(idmappedSources('lxc.rootfs.path = dir:/r\n', '/r'), [], 'privileged: nothing is idmapped');
});

test('host errors become 400/404 naming the path; others pass through', () => {
  const errno = (code: string) => Object.assign(new Error(code), { code });
  assert.match((fsError(errno('ENOSPC'), '/x') as Error).message, /^Path "\/x": no space left/);
  assert.ok(fsError(errno('EROFS'), '/x') instanceof ValidationError);
  assert.ok(fsError(errno('ENOENT'), '/x') instanceof NotFoundError);
  const other = new Error('boom');
  assert.equal(fsError(other, '/x'), other);
});

describe('id maps', () => {
  test('parse /proc/<pid>/uid_map and translate both ways', () => {
    assert.equal(parseIdMap('         0          0 4294967295\n'), undefined);
    const map = parseIdMap('         0    1000000      65536\n')!;
    assert.deepEqual(map, [{ nsid: 0, hostid: 1000000, count: 65536 }]);
    const view = { root: -1, map: { uid: map, gid: map } };
    assert.equal(toInside(view, 'uid', 1000033), 33);
    assert.equal(toInside(view, 'uid', 0), 65534);
    assert.equal(toView(view, 'gid', 33), 1000033);
    assert.throws(() => toView(view, 'uid', 70000), /not mapped/);
  });

  test("an unprivileged container's LXC config: ids it does not map are refused, mapped ones kept as they are", () => {
    const mapped = parseLxcIdmap(
      'lxc.rootfs.options = idmap=container\nlxc.idmap = u 0 1000000 65536\nlxc.idmap = g 0 1000000 65536\n',
    )!;
    assert.deepEqual(mapped.gid, [{ nsid: 0, hostid: 1000000, count: 65536 }]);
    assert.equal(parseLxcIdmap('lxc.uts.name = x\n'), undefined);
    const view = { root: -1, mapped };
    assert.equal(toView(view, 'uid', 1000), 1000);
    assert.equal(toInside(view, 'uid', 1000), 1000);
    assert.throws(
      () => toView(view, 'gid', 65536),
      /gid 65536 is not mapped in the container \(its gid map covers 0-65535\)/,
    );
  });
});

test('the pseudo file system guard stops the walk before anything is asked of /proc or /sys', () => {
  const guard = pseudoFsGuard(fs.readFileSync('/proc/self/mountinfo', 'utf8'));
  const hostRoot = openRoot('/');
  try {
    assert.throws(
      () => resolveParent(hostRoot, '/proc/self/status', guard),
      /on a proc file system \(\/proc in the container\)/,
    );
    assert.throws(() => resolveParent(hostRoot, '/sys/kernel/x', guard), /on a sysfs file system/);
    const r = resolveParent(hostRoot, '/proc', guard);
    assert.equal(r.name, 'proc', 'the mount point itself is only named, not entered');
    r.close();
    const ok = resolveParent(hostRoot, path.join(root, 'a/b/c'), guard);
    ok.close();
  } finally {
    fs.closeSync(hostRoot);
  }
});

test('openRoot refuses what is not a directory', () => {
  assert.throws(() => openRoot(path.join(root, 'a/file')));
});
