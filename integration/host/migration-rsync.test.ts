import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import { spawnProcess } from '../../src/host/exec.ts';
import {
  type RsyncFeature,
  rsyncReceiveArgs,
  rsyncSendArgs,
  rsyncSkipsSelinuxXattrs,
  socketRsh,
} from '../../src/host/migration/rsync-args.ts';
import { FsChannel } from '../../src/host/migration/ws-frames.ts';

// One rsync session as a migration runs it: the client argv on one side, the server argv on the
// other, their stdio joined only through a real websocket pair in LXD's framing. Both rsyncs run
// through svcd's spawn helper (spawnProcess), as the roles will.
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mig-rsync-'));
const src = path.join(root, 'src');
const skipSelinuxXattrs = rsyncSkipsSelinuxXattrs(execFileSync('rsync', ['--version'], { encoding: 'utf8' }));
const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
// no attr package here: python's os.setxattr/getxattr set and read the user xattr
const setXattr = (file: string, name: string, value: string) =>
  execFileSync('python3', [
    '-c',
    'import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())',
    file,
    name,
    value,
  ]);
const getXattr = (file: string, name: string) =>
  execFileSync(
    'python3',
    ['-c', 'import os,sys; sys.stdout.write(os.getxattr(sys.argv[1], sys.argv[2]).decode())', file, name],
    { encoding: 'utf8' },
  );

before(async () => {
  await once(server, 'listening');
  fs.mkdirSync(path.join(src, 'etc'), { recursive: true });
  fs.writeFileSync(path.join(src, 'etc/hostname'), 'c1\n', { mode: 0o640 });
  fs.chmodSync(path.join(src, 'etc/hostname'), 0o640);
  fs.chownSync(path.join(src, 'etc/hostname'), 1000000, 1000005);
  fs.chownSync(path.join(src, 'etc'), 1000000, 1000000);
  fs.symlinkSync('../etc/hostname', path.join(src, 'link'));
  fs.lchownSync(path.join(src, 'link'), 1000033, 1000033);
  execFileSync('truncate', ['-s', '64M', path.join(src, 'sparse')]);
  fs.writeFileSync(path.join(src, 'hard-a'), 'shared');
  fs.linkSync(path.join(src, 'hard-a'), path.join(src, 'hard-b'));
  execFileSync('mknod', ['-m', '0620', path.join(src, 'tty9'), 'c', '4', '9']);
  setXattr(path.join(src, 'etc/hostname'), 'user.svcd', 'kept');
  fs.writeFileSync(path.join(src, 'doomed'), 'x');
});
after(() => {
  server.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function transfer(
  dst: string,
  features: RsyncFeature[],
  o: { from?: string; basis?: { dir: string; mode: 'link' | 'copy' } } = {},
): Promise<{ sentBarrier: boolean; receivedBarrier: boolean }> {
  const accepted = once(server, 'connection') as Promise<[WebSocket]>;
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as net.AddressInfo).port}/`);
  await once(client, 'open');
  const [peer] = await accepted;
  // each channel owns its socket's messages from the start: the server's first bytes may come early
  const clientChannel = new FsChannel(client);
  const peerChannel = new FsChannel(peer);
  let sentBarrier = false;
  let receivedBarrier = false;
  peer.on('message', (d, isBinary) => {
    receivedBarrier ||= !isBinary && (d as Buffer).length === 0;
  });
  client.on('message', (d, isBinary) => {
    sentBarrier ||= !isBinary && (d as Buffer).length === 0;
  });

  // sending side: rsync's -e command connects to this unix socket, joined to the websocket
  const name = path.join(root, `rsh-${Date.now()}.sock`);
  const listener = net.createServer((sock) => {
    const s = clientChannel.session();
    sock.pipe(s);
    s.pipe(sock);
  });
  listener.listen(name);
  await once(listener, 'listening');
  const receiver = await spawnProcess(
    'rsync',
    rsyncReceiveArgs({ targetPath: dst, features, skipSelinuxXattrs, basis: o.basis }),
    {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
    },
  );
  const r = peerChannel.session();
  r.pipe(receiver.stdin!);
  receiver.stdout!.pipe(r);
  const sender = await spawnProcess(
    'rsync',
    rsyncSendArgs({ sourcePath: o.from ?? src, features, skipSelinuxXattrs, rsh: socketRsh(name) }),
    { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
  );
  let errs = '';
  sender.stderr!.on('data', (d) => (errs += d));
  receiver.stderr!.on('data', (d) => (errs += d));
  sender.stdout!.resume();
  // a sender that fails leaves the server waiting for data: it goes too
  void sender.exited.then((e) => e.exitCode !== 0 && receiver.kill('SIGKILL'));
  const [se, re] = await Promise.all([sender.exited, receiver.exited]);
  await new Promise((res) => setTimeout(res, 50));
  listener.close();
  client.close();
  assert.equal(se.exitCode, 0, errs);
  assert.equal(re.exitCode, 0, errs);
  return { sentBarrier, receivedBarrier };
}

test('a tree crosses the websocket: contents, modes, numeric owners, xattrs, device, symlink, sparse file', async () => {
  const dst = path.join(root, 'dst');
  fs.mkdirSync(dst);
  const { sentBarrier, receivedBarrier } = await transfer(dst, ['xattrs', 'delete', 'compress']);
  assert.ok(receivedBarrier, 'the sending side closed its stream with an empty text message');
  assert.ok(sentBarrier, 'the receiving side closed its stream with an empty text message');
  const host = fs.statSync(path.join(dst, 'etc/hostname'));
  assert.equal(fs.readFileSync(path.join(dst, 'etc/hostname'), 'utf8'), 'c1\n');
  assert.deepEqual([host.mode & 0o7777, host.uid, host.gid], [0o640, 1000000, 1000005]);
  assert.equal(fs.statSync(path.join(dst, 'etc')).uid, 1000000);
  assert.equal(getXattr(path.join(dst, 'etc/hostname'), 'user.svcd'), 'kept');
  assert.equal(fs.readlinkSync(path.join(dst, 'link')), '../etc/hostname');
  assert.equal(fs.lstatSync(path.join(dst, 'link')).uid, 1000033);
  const dev = fs.statSync(path.join(dst, 'tty9'));
  assert.ok(dev.isCharacterDevice());
  assert.deepEqual([dev.rdev >> 8, dev.rdev & 0xff, dev.mode & 0o7777], [4, 9, 0o620]);
  const sparse = fs.statSync(path.join(dst, 'sparse'));
  assert.equal(sparse.size, 64 * 1024 * 1024);
  assert.ok(sparse.blocks * 512 < 1024 * 1024, `sparse file took ${sparse.blocks * 512} bytes`);
  // LXD's argv has no -H: hard links arrive as equal, separate files
  assert.equal(fs.readFileSync(path.join(dst, 'hard-b'), 'utf8'), 'shared');
  assert.notEqual(fs.statSync(path.join(dst, 'hard-a')).ino, fs.statSync(path.join(dst, 'hard-b')).ino);
});

test('a second session with --delete sends the delta: a file removed at the source goes', async () => {
  const dst = path.join(root, 'dst');
  fs.rmSync(path.join(src, 'doomed'));
  fs.writeFileSync(path.join(src, 'new'), 'fresh');
  const { sentBarrier, receivedBarrier } = await transfer(dst, ['xattrs', 'delete']);
  assert.ok(sentBarrier && receivedBarrier);
  assert.equal(fs.existsSync(path.join(dst, 'doomed')), false);
  assert.equal(fs.readFileSync(path.join(dst, 'new'), 'utf8'), 'fresh');
});

test('a snapshot chain: unchanged files are linked to the snapshot before, the volume gets copies of its own', async () => {
  const from = path.join(root, 'chain-src');
  fs.mkdirSync(path.join(from, 'etc'), { recursive: true });
  fs.writeFileSync(path.join(from, 'big'), Buffer.alloc(256 * 1024, 7));
  fs.writeFileSync(path.join(from, 'etc/hostname'), 'one\n');
  fs.chownSync(path.join(from, 'big'), 1000000, 1000000);
  const [s1, s2, vol] = ['chain-s1', 'chain-s2', 'chain-vol'].map((d) => path.join(root, d)) as [
    string,
    string,
    string,
  ];
  for (const d of [s1, s2, vol]) fs.mkdirSync(d);
  await transfer(s1, ['xattrs', 'delete'], { from });
  fs.writeFileSync(path.join(from, 'etc/hostname'), 'two, longer\n');
  fs.writeFileSync(path.join(from, 'new'), 'fresh');
  await transfer(s2, ['xattrs', 'delete'], { from, basis: { dir: s1, mode: 'link' } });
  await transfer(vol, ['xattrs', 'delete'], { from, basis: { dir: s2, mode: 'copy' } });
  const ino = (d: string, f: string) => fs.statSync(path.join(d, f)).ino;
  assert.equal(ino(s2, 'big'), ino(s1, 'big'), 'an unchanged file is a link to the snapshot before');
  assert.notEqual(ino(s2, 'etc/hostname'), ino(s1, 'etc/hostname'));
  assert.equal(fs.readFileSync(path.join(s1, 'etc/hostname'), 'utf8'), 'one\n', 'the snapshot before is untouched');
  assert.equal(fs.readFileSync(path.join(s2, 'etc/hostname'), 'utf8'), 'two, longer\n');
  assert.equal(fs.existsSync(path.join(s1, 'new')), false);
  for (const f of ['big', 'etc/hostname', 'new']) {
    assert.notEqual(ino(vol, f), ino(s2, f), `${f}: the volume's own file, no link to a snapshot`);
    assert.deepEqual(fs.readFileSync(path.join(vol, f)), fs.readFileSync(path.join(from, f)));
  }
  assert.equal(fs.statSync(path.join(vol, 'big')).uid, 1000000);
  // written to, the volume leaves the snapshots as they were
  fs.writeFileSync(path.join(vol, 'big'), 'changed');
  assert.equal(fs.statSync(path.join(s1, 'big')).size, 256 * 1024);
});
