/**
 * btrfs send/receive between svcd and Debian's LXD 5.0.2, both on btrfs pools, both ways, with
 * Debian's lxc unmodified. A snapshot subvolume with a received uuid on the sink shows the data came
 * by `btrfs receive`, not rsync (LXD → svcd: svcd's log says which, as the shift on adoption leaves
 * none). From LXD the tree is owned by LXD's host ids: svcd shifts each snapshot and the volume on
 * adoption, so owners inside stay what they were.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { receivedUuids } from '../support/btrfs-subvolumes.ts';
import { buildBusyboxImage } from '../support/busybox-image.ts';
import { teardownContainers } from '../support/container-env.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { lxdAvailable, startLxd, type LxdHost } from '../support/lxd-daemon.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { importTestImage, startHost, stopHosts, type Host } from '../support/two-hosts.ts';

const skip = (await lxcSkipReason()) ?? (lxdAvailable() ? undefined : 'Debian LXD (lxd) is not installed');
const PASSWORD = 'lxd-bt-s3cret';
const UUID = /^[0-9a-f-]{36}$/;

describe('btrfs send/receive between svcd and LXD 5.0.2', { skip }, () => {
  let s: Host;
  let l: LxdHost;
  let lxc: LxcCli;
  let imgDir = '';
  const dirs: string[] = [];

  const out = async (r: string, name: string, cmd: string[]) => {
    const res = await lxc.run(['exec', `${r}:${name}`, '--', ...cmd]);
    assert.equal(res.code, 0, `${cmd.join(' ')} on ${r}:${name}: ${res.stderr}`);
    return res.stdout;
  };

  /** On remote `r`'s btrfs pool: files owned by root and by uid 1000, snapshot snap0, one more file, snap1. */
  async function prepare(r: string, name: string, pool: string) {
    await lxc.ok(['launch', `${r}:bb`, `${r}:${name}`, '--storage', pool]);
    await out(r, name, [
      'sh',
      '-c',
      'echo one > /root/one; mkdir -p /home/u; echo mine > /home/u/f; chown -R 1000:1000 /home/u',
    ]);
    await lxc.ok(['snapshot', `${r}:${name}`, 'snap0']);
    await out(r, name, ['sh', '-c', 'echo two > /root/two']);
    await lxc.ok(['snapshot', `${r}:${name}`, 'snap1']);
    await out(r, name, ['sh', '-c', 'echo three > /root/three']);
    await lxc.ok(['stop', `${r}:${name}`, '--force']);
  }

  /** The copy on `r` starts with the files and owners, then snap0 restored has only the first file. */
  async function check(r: string, name: string) {
    await lxc.ok(['start', `${r}:${name}`]);
    assert.equal(await out(r, name, ['cat', '/root/one', '/root/two', '/root/three']), 'one\ntwo\nthree\n');
    assert.equal(
      (await out(r, name, ['stat', '-c', '%u:%g', '/root/two', '/home/u/f', '/bin/busybox'])).trim(),
      '0:0\n1000:1000\n0:0',
    );
    await lxc.ok(['stop', `${r}:${name}`, '--force']);
    await lxc.ok(['restore', `${r}:${name}`, 'snap0']);
    await lxc.ok(['start', `${r}:${name}`]);
    assert.equal(await out(r, name, ['ls', '/root']), 'one\n');
    assert.equal((await out(r, name, ['stat', '-c', '%u:%g', '/home/u/f'])).trim(), '1000:1000');
    await lxc.ok(['stop', `${r}:${name}`, '--force']);
  }

  before(async () => {
    await ensureRootSubids();
    s = await startHost('s');
    assert.equal((await s.api.patch('/1.0', { config: { 'core.trust_password': PASSWORD } })).status, 200);
    const p = await s.api.post('/1.0/storage-pools', { name: 'bt', driver: 'btrfs', config: { size: '768MiB' } });
    assert.equal(p.status, 200, p.text);
    dirs.push((await importTestImage(s, { alias: 'bb' })).dir);
    l = await startLxd('mbt', { pool: 'btrfs' });
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
    const img = await buildBusyboxImage({ dir: imgDir, format: 'unified', compression: 'gzip' });
    lxc = await lxcCli(s.daemon.stateDir);
    await lxc.ok(['remote', 'add', 's', s.url, '--password', PASSWORD, '--accept-certificate']);
    await lxc.ok(['remote', 'add', 'l', l.url, '--password', l.trustPassword, '--accept-certificate']);
    if (img.format !== 'unified') throw new Error('unexpected image format');
    await lxc.ok(['image', 'import', img.file, 'l:', '--alias', 'bb']);
  });
  after(async () => {
    await teardownContainers(s?.daemon, s?.api);
    await l?.destroy();
    await stopHosts([s], dirs);
    await lxc?.cleanup();
    if (imgDir) await rm(imgDir, { recursive: true, force: true });
  });

  test('lxd → svcd: received subvolumes, shifted to container ids, snapshots in order', async () => {
    await prepare('l', 'fromlxd', 'default');
    const snapsDir = path.join(s.daemon.stateDir, 'storage-pools', 'bt', 'containers-snapshots');
    const had = receivedUuids(snapsDir);
    await lxc.ok(['copy', 'l:fromlxd', 's:fromlxd', '--storage', 'bt']);
    // LXD's tree is shifted on adoption (a writable snapshot, shifted, made read-only: no received uuid
    // then), so what shows btrfs here is svcd's own account of the transfer
    assert.equal([...receivedUuids(snapsDir)].filter(([p]) => !had.has(p)).length, 2);
    assert.match(s.daemon.output(), /"container":"fromlxd","fs":"BTRFS","snapshots":2,"msg":"container received"/);
    const snaps = (await s.api.get('/1.0/containers/fromlxd/snapshots?recursion=1')).json.metadata as any[];
    assert.deepEqual(
      snaps.map((x) => x.name),
      ['snap0', 'snap1'],
    );
    await check('s', 'fromlxd');
  });

  test('svcd → lxd: LXD receives the streams as its own subvolumes', async () => {
    await prepare('s', 'fromsvcd', 'bt');
    await lxc.ok(['copy', 's:fromsvcd', 'l:fromsvcd']);
    const got = receivedUuids(path.join(l.dir, 'storage-pools', 'default', 'containers-snapshots'));
    const mine = [...got].filter(([p]) => p.includes('/fromsvcd/'));
    assert.deepEqual(mine.map(([p]) => path.basename(p)).sort(), ['snap0', 'snap1']);
    for (const [p, uuid] of mine) assert.match(uuid, UUID, `${p} came by btrfs receive`);
    await check('l', 'fromsvcd');
  });

  test('a running container, --stateless, both ways: one send of a snapshot of that moment', async () => {
    await lxc.ok(['start', 'l:fromlxd']);
    await lxc.ok(['copy', 'l:fromlxd', 's:runlxd', '--stateless', '--storage', 'bt']);
    await lxc.ok(['stop', 'l:fromlxd', '--force']);
    assert.match(s.daemon.output(), /"container":"runlxd","fs":"BTRFS","snapshots":2/);
    await check('s', 'runlxd');
    await lxc.ok(['start', 's:fromsvcd']);
    await lxc.ok(['copy', 's:fromsvcd', 'l:runsvcd', '--stateless']);
    await lxc.ok(['stop', 's:fromsvcd', '--force']);
    await check('l', 'runsvcd');
  });

  test('custom volumes with a snapshot, both ways, push mode one way', async () => {
    await lxc.ok(['storage', 'volume', 'create', 'l:default', 'lvol']);
    const ldir = path.join(l.dir, 'storage-pools', 'default', 'custom', 'default_lvol');
    await writeFile(path.join(ldir, 'data'), 'first\n');
    await lxc.ok(['storage', 'volume', 'snapshot', 'l:default', 'lvol', 'ls1']);
    await writeFile(path.join(ldir, 'data'), 'second\n');
    await lxc.ok(['storage', 'volume', 'copy', 'l:default/lvol', 's:bt/lvol']);
    assert.match(s.daemon.output(), /"volume":"lvol","fs":"BTRFS","snapshots":1/);
    assert.deepEqual((await s.api.get('/1.0/storage-pools/bt/volumes/custom/lvol/snapshots')).json.metadata, [
      '/1.0/storage-pools/bt/volumes/custom/lvol/snapshots/ls1',
    ]);
    assert.equal((await s.api.put('/1.0/storage-pools/bt/volumes/custom/lvol', { restore: 'ls1' })).status, 200);
    await lxc.ok(['storage', 'volume', 'copy', 's:bt/lvol', 'l:default/back', '--mode', 'push']);
    const back = path.join(l.dir, 'storage-pools', 'default', 'custom', 'default_back');
    assert.equal(await readFile(path.join(back, 'data'), 'utf8'), 'first\n');
    const snaps = receivedUuids(path.join(l.dir, 'storage-pools', 'default', 'custom-snapshots'));
    const mine = [...snaps].filter(([p]) => p.includes('default_back'));
    assert.equal(mine.length, 1);
    assert.match(mine[0]![1], UUID, 'LXD received the snapshot by btrfs receive');
  });

  test('rsync when either side is not btrfs: svcd btrfs → LXD dir, LXD btrfs → svcd dir', async () => {
    await lxc.ok(['storage', 'create', 'l:ldir', 'dir']);
    await lxc.ok(['copy', 's:fromsvcd', 'l:todir', '--storage', 'ldir']);
    await check('l', 'todir');
    await lxc.ok(['copy', 'l:fromlxd', 's:todir', '--storage', 'default']);
    assert.match(s.daemon.output(), /"container":"todir","fs":"RSYNC","snapshots":2/);
    await check('s', 'todir');
  });
});
