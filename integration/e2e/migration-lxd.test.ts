/**
 * Migration between svcd and Debian's LXD 5.0.2 (support/lxd-daemon.ts), both ways, driven by
 * Debian's lxc unmodified with both as HTTPS remotes: `lxc copy` (pull, push and relay), `lxc move`,
 * snapshots, and a running container copied with --stateless. LXD keeps root filesystems shifted
 * on disk (owned by its host ids): what arrives at svcd is shifted to container ids, so files keep
 * their owners inside; what svcd sends is unshifted, and LXD shifts it at its first start.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildBusyboxImage } from '../support/busybox-image.ts';
import { teardownContainers } from '../support/container-env.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { lxdAvailable, startLxd, type LxdHost } from '../support/lxd-daemon.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { importTestImage, receivedLine, startHost, stopHosts, type Host } from '../support/two-hosts.ts';

const skip = (await lxcSkipReason()) ?? (lxdAvailable() ? undefined : 'Debian LXD (lxd) is not installed');
const PASSWORD = 'lxd-mig-s3cret';

describe('migration between svcd and LXD 5.0.2', { skip }, () => {
  let s: Host;
  let l: LxdHost;
  let lxc: LxcCli;
  let imgDir = '';
  const dirs: string[] = [];

  /** `lxc exec` on remote `r`; stdout. */
  const exec = (r: string, name: string, cmd: string[]) => lxc.run(['exec', `${r}:${name}`, '--', ...cmd]);
  const out = async (r: string, name: string, cmd: string[]) => {
    const res = await exec(r, name, cmd);
    assert.equal(res.code, 0, `${cmd.join(' ')} on ${r}:${name}: ${res.stderr}`);
    return res.stdout;
  };

  /** A container on remote `r` with two files owned by root and by uid 1000, and a snapshot between them. */
  async function prepare(r: string, name: string) {
    await lxc.ok(['launch', `${r}:bb`, `${r}:${name}`]);
    await out(r, name, [
      'sh',
      '-c',
      'echo one > /root/one; mkdir -p /home/u; echo mine > /home/u/f; chown -R 1000:1000 /home/u',
    ]);
    await lxc.ok(['snapshot', `${r}:${name}`, 'snap0']);
    await out(r, name, ['sh', '-c', 'echo two > /root/two']);
    await lxc.ok(['stop', `${r}:${name}`, '--force']);
  }

  /** The copy on `r` starts, has both files with their owners, and its snapshot. */
  async function check(r: string, name: string) {
    await lxc.ok(['start', `${r}:${name}`]);
    assert.equal(await out(r, name, ['cat', '/root/one', '/root/two']), 'one\ntwo\n');
    assert.equal(
      (await out(r, name, ['stat', '-c', '%u:%g', '/root/two', '/home/u/f', '/bin/busybox'])).trim(),
      '0:0\n1000:1000\n0:0',
    );
    const info = await lxc.ok(['info', `${r}:${name}`]);
    assert.match(info, /snap0/);
    await lxc.ok(['stop', `${r}:${name}`, '--force']);
  }

  before(async () => {
    await ensureRootSubids();
    s = await startHost('s');
    assert.equal((await s.api.patch('/1.0', { config: { 'core.trust_password': PASSWORD } })).status, 200);
    dirs.push((await importTestImage(s, { alias: 'bb' })).dir);
    l = await startLxd('mig');
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

  test('lxd → svcd: lxc copy (pull), owners kept inside, the snapshot along', async () => {
    await prepare('l', 'fromlxd');
    await lxc.ok(['copy', 'l:fromlxd', 's:fromlxd']);
    await check('s', 'fromlxd');
    // LXD never offers svcd's xxh128: both rsyncs verify with MD5, as LXD's own do
    assert.equal(receivedLine(s, 'fromlxd').rsync, 'xattrs,delete');
    const ct = (await s.api.get('/1.0/containers/fromlxd')).json.metadata;
    assert.equal(ct.config['volatile.last_state.idmap'], '[]', 'the tree is in container ids on svcd');
    assert.equal(ct.config['image.os'], 'busybox', 'the container config came along');
  });

  test('svcd → lxd: lxc copy (pull); LXD shifts it at its first start', async () => {
    await prepare('s', 'fromsvcd');
    await lxc.ok(['copy', 's:fromsvcd', 'l:fromsvcd']);
    await check('l', 'fromsvcd');
  });

  test('push and relay, both ways', async () => {
    for (const mode of ['push', 'relay']) {
      await lxc.ok(['copy', 'l:fromlxd', `s:lxd-${mode}`, '--mode', mode]);
      await check('s', `lxd-${mode}`);
      await lxc.ok(['copy', 's:fromsvcd', `l:svcd-${mode}`, '--mode', mode]);
      await check('l', `svcd-${mode}`);
    }
  });

  test('a running container, --stateless, both ways', async () => {
    await lxc.ok(['start', 'l:fromlxd']);
    await lxc.ok(['copy', 'l:fromlxd', 's:runlxd', '--stateless']);
    await lxc.ok(['stop', 'l:fromlxd', '--force']);
    await check('s', 'runlxd');
    await lxc.ok(['start', 's:fromsvcd']);
    await lxc.ok(['copy', 's:fromsvcd', 'l:runsvcd', '--stateless']);
    await lxc.ok(['stop', 's:fromsvcd', '--force']);
    await check('l', 'runsvcd');
  });

  test('custom volumes, both ways: copy with a snapshot, and move', async () => {
    // LXD keeps a custom volume at storage-pools/<pool>/custom/<project>_<name>
    await lxc.ok(['storage', 'volume', 'create', 'l:default', 'lvol']);
    const ldir = path.join(l.dir, 'storage-pools', 'default', 'custom', 'default_lvol');
    await writeFile(path.join(ldir, 'data'), 'first\n');
    await lxc.ok(['storage', 'volume', 'snapshot', 'l:default', 'lvol', 'ls1']);
    await writeFile(path.join(ldir, 'data'), 'second\n');
    await lxc.ok(['storage', 'volume', 'copy', 'l:default/lvol', 's:default/lvol']);
    const snaps = (await s.api.get('/1.0/storage-pools/default/volumes/custom/lvol/snapshots')).json.metadata;
    assert.deepEqual(snaps, ['/1.0/storage-pools/default/volumes/custom/lvol/snapshots/ls1']);
    // and back to LXD under another name, then moved: LXD has the data, svcd no longer has the volume
    await lxc.ok(['storage', 'volume', 'copy', 's:default/lvol', 'l:default/back']);
    const back = path.join(l.dir, 'storage-pools', 'default', 'custom', 'default_back');
    assert.equal(await readFile(path.join(back, 'data'), 'utf8'), 'second\n');
    assert.match(await lxc.ok(['storage', 'volume', 'show', 'l:default', 'back/ls1']), /name: ls1/);
    await lxc.ok(['storage', 'volume', 'move', 's:default/lvol', 'l:default/moved']);
    assert.equal((await s.api.get('/1.0/storage-pools/default/volumes/custom/lvol')).status, 404);
    assert.equal(
      await readFile(path.join(l.dir, 'storage-pools', 'default', 'custom', 'default_moved', 'data'), 'utf8'),
      'second\n',
    );
  });

  test('lxc move, both ways: the source is gone only after the sink has it', async () => {
    await lxc.ok(['move', 'l:fromlxd', 's:moved']);
    assert.notEqual((await lxc.run(['info', 'l:fromlxd'])).code, 0);
    await check('s', 'moved');
    await lxc.ok(['move', 's:moved', 'l:back']);
    assert.equal((await s.api.get('/1.0/containers/moved')).status, 404);
    await check('l', 'back');
  });
});
