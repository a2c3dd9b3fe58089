/**
 * Container migration between two svcd daemons on loopback, driven by Debian's lxc 5.0.2 unmodified
 * (pull, push and relay: `lxc copy --mode`), and by the API where lxc cannot show a fault. Each copy
 * carries snapshots (oldest first, each with its own content and config) and lands as a container that
 * starts on the other host with its files; `lxc move` deletes the source only after the sink succeeded.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { teardownContainers, waitOp } from '../support/container-env.ts';
import { eventually } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { importTestImage, receivedLine, startTwoHosts, stopHosts, type Host } from '../support/two-hosts.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();

const PASSWORD = 'mig-s3cret';

describe('container migration between two svcd hosts', { skip }, () => {
  let a: Host;
  let b: Host;
  let lxc: LxcCli;
  const dirs: string[] = [];

  const exec = async (h: Host, name: string, cmd: string[]) => {
    const r = await h.api.post(`/1.0/containers/${name}/exec`, {
      command: cmd,
      'wait-for-websocket': false,
      'record-output': true,
      interactive: false,
    });
    const op = await waitOp(h.api, r);
    const out = await h.api.get(op.metadata.output['1']);
    return { code: op.metadata.return as number, out: out.text };
  };
  const state = async (h: Host, name: string, action: string) =>
    waitOp(h.api, await h.api.put(`/1.0/containers/${name}/state`, { action, force: true }));

  /** A container on `h` with a file, and two snapshots, each after one more file. */
  async function prepare(h: Host, name: string) {
    await waitOp(
      h.api,
      await h.api.post('/1.0/containers', {
        name,
        source: { type: 'image', alias: 'bb' },
        config: { 'user.origin': h.name },
      }),
    );
    await state(h, name, 'start');
    await exec(h, name, ['sh', '-c', 'echo one > /root/one']);
    await waitOp(h.api, await h.api.post(`/1.0/containers/${name}/snapshots`, { name: 's1' }));
    await exec(h, name, ['sh', '-c', 'echo two > /root/two']);
    await waitOp(h.api, await h.api.post(`/1.0/containers/${name}/snapshots`, { name: 's2' }));
    await exec(h, name, ['sh', '-c', 'echo three > /root/three; rm /root/one']);
    await state(h, name, 'stop');
  }

  /** The copy on `h` has the snapshots in order, the live files, and starts. */
  async function checkCopy(h: Host, name: string) {
    const ct = (await h.api.get(`/1.0/containers/${name}`)).json.metadata;
    assert.equal(ct.config['user.origin'], 'a');
    const snaps = (await h.api.get(`/1.0/containers/${name}/snapshots?recursion=1`)).json.metadata as any[];
    assert.deepEqual(
      snaps.map((s) => s.name),
      ['s1', 's2'],
    );
    await state(h, name, 'start');
    assert.equal((await exec(h, name, ['cat', '/root/two', '/root/three'])).out, 'two\nthree\n');
    assert.notEqual((await exec(h, name, ['test', '-e', '/root/one'])).code, 0, 'a file deleted at the source is gone');
    await state(h, name, 'stop');
    // the snapshots hold their own content: restore s1 and look
    await waitOp(h.api, await h.api.put(`/1.0/containers/${name}`, { restore: 's1' }));
    await state(h, name, 'start');
    assert.equal((await exec(h, name, ['cat', '/root/one'])).out, 'one\n');
    assert.notEqual((await exec(h, name, ['test', '-e', '/root/two'])).code, 0);
    await state(h, name, 'stop');
  }

  before(async () => {
    await ensureRootSubids();
    [a, b] = await startTwoHosts();
    for (const h of [a, b])
      assert.equal((await h.api.patch('/1.0', { config: { 'core.trust_password': PASSWORD } })).status, 200);
    for (const h of [a, b]) dirs.push((await importTestImage(h, { alias: 'bb' })).dir);
    lxc = await lxcCli(a.daemon.stateDir);
    for (const h of [a, b])
      await lxc.ok(['remote', 'add', h.name, h.url, '--password', PASSWORD, '--accept-certificate']);
  });
  after(async () => {
    await teardownContainers(a?.daemon, a?.api);
    await teardownContainers(b?.daemon, b?.api);
    await stopHosts([a, b], dirs);
    await lxc?.cleanup();
  });

  test('pull (lxc copy): snapshots oldest first, the live data, and it starts on the other host', async () => {
    await prepare(a, 'pull1');
    await lxc.ok(['copy', 'a:pull1', 'b:pull1']);
    await checkCopy(b, 'pull1');
    // two svcd sides agree on xxh128 (svcd's own rsyncFeatures field) when their rsync has it
    const received = receivedLine(b, 'pull1');
    const hasXxh = /Checksum list:\s*\n\s*[^\n]*\bxxh128\b/.test((await run('rsync', ['--version'])).stdout);
    assert.equal(received.rsync, hasXxh ? 'xattrs,delete,xxh128' : 'xattrs,delete', JSON.stringify(received));
    // the source is untouched
    assert.equal((await a.api.get('/1.0/containers/pull1')).status, 200);
  });

  test('the source operation holds one string secret per channel; a wrong secret is refused', async () => {
    const r = await a.api.post('/1.0/containers/pull1', { name: '', migration: true });
    assert.equal(r.status, 202, r.text);
    const op = (await a.api.get(r.json.operation)).json.metadata;
    assert.equal(op.class, 'websocket');
    assert.deepEqual(Object.keys(op.metadata).sort(), ['control', 'fs']);
    for (const v of Object.values(op.metadata)) assert.equal(typeof v, 'string');
    const sink = await b.api.post('/1.0/containers', {
      name: 'wrongsecret',
      source: {
        type: 'migration',
        mode: 'pull',
        operation: `${a.url}/1.0/operations/${op.id}`,
        certificate: a.cert,
        secrets: { control: op.metadata.control, fs: 'f'.repeat(64) },
      },
    });
    const failed = await waitOp(b.api, sink, 'Failure');
    assert.match(failed.err, /refused|403/i);
    // the source gives up once nobody connected its fs channel
    const src = await a.api.get(`${r.json.operation}/wait?timeout=30`);
    assert.equal(src.json.metadata.status, 'Failure');
    assert.equal((await b.api.get('/1.0/containers/wrongsecret')).status, 404);
    assert.deepEqual(await leftovers(b), []);
  });

  test('push and relay (lxc copy --mode)', async () => {
    await lxc.ok(['copy', 'a:pull1', 'b:push1', '--mode', 'push']);
    await checkCopy(b, 'push1');
    await lxc.ok(['copy', 'a:pull1', 'b:relay1', '--mode', 'relay']);
    await checkCopy(b, 'relay1');
  });

  test('a running container copies statelessly; a live copy is refused and leaves nothing', async () => {
    await state(a, 'pull1', 'start');
    const live = await lxc.run(['copy', 'a:pull1', 'b:live1']);
    assert.notEqual(live.code, 0);
    assert.match(live.stderr, /CRIU/);
    assert.equal((await b.api.get('/1.0/containers/live1')).status, 404);
    await lxc.ok(['copy', 'a:pull1', 'b:stateless1', '--stateless']);
    const ct = (await b.api.get('/1.0/containers/stateless1')).json.metadata;
    assert.equal(ct.status, 'Stopped');
    await state(b, 'stateless1', 'start');
    assert.equal((await exec(b, 'stateless1', ['cat', '/root/three'])).out, 'three\n');
    await state(a, 'pull1', 'stop');
  });

  test('btrfs to btrfs: snapshots become subvolume snapshots on the sink', async () => {
    for (const h of [a, b]) {
      const r = await h.api.post('/1.0/storage-pools', { name: 'bt', driver: 'btrfs', config: { size: '512MiB' } });
      assert.equal(r.status, 200, r.text);
    }
    await lxc.ok(['copy', 'a:pull1', 'a:onbt', '--storage', 'bt']);
    await lxc.ok(['copy', 'a:onbt', 'b:onbt', '--storage', 'bt']);
    const ct = (await b.api.get('/1.0/containers/onbt')).json.metadata;
    assert.equal(ct.expanded_devices.root.pool, 'bt');
    await checkCopy(b, 'onbt');
  });

  test('a snapshot copied to the other host is a container of its own, with the files of that snapshot', async () => {
    await lxc.ok(['copy', 'a:pull1/s1', 'b:froms1']);
    const snaps = (await b.api.get('/1.0/containers/froms1/snapshots')).json.metadata;
    assert.deepEqual(snaps, []);
    await state(b, 'froms1', 'start');
    assert.equal((await exec(b, 'froms1', ['cat', '/root/one'])).out, 'one\n');
    assert.notEqual((await exec(b, 'froms1', ['test', '-e', '/root/two'])).code, 0);
    await state(b, 'froms1', 'stop');
  });

  test('lxc move: the sink has it, then the source is gone', async () => {
    await prepare(a, 'mover');
    await lxc.ok(['move', 'a:mover', 'b:mover']);
    assert.equal((await a.api.get('/1.0/containers/mover')).status, 404);
    await checkCopy(b, 'mover');
  });

  /** The directory of the only custom volume svcd made on `h` since `before` listed them. */
  const customDir = (h: Host) => path.join(h.daemon.stateDir, 'storage-pools', 'default', 'custom');
  const newVolumeDir = async (h: Host, before: string[]) => {
    const now = (await readdir(customDir(h))).filter((d) => !before.includes(d));
    assert.equal(now.length, 1, `one new volume directory, got ${now.join(', ')}`);
    return path.join(customDir(h), now[0]!);
  };

  test('custom volumes: lxc storage volume copy (pull, push, relay) and move, with their snapshots', async () => {
    const seen = await readdir(customDir(a)).catch(() => [] as string[]);
    await lxc.ok(['storage', 'volume', 'create', 'a:default', 'vol1', 'user.k=v']);
    const dir = await newVolumeDir(a, seen);
    await writeFile(path.join(dir, 'data'), 'first\n');
    await lxc.ok(['storage', 'volume', 'snapshot', 'a:default', 'vol1', 'vs1']);
    await writeFile(path.join(dir, 'data'), 'second\n');
    for (const mode of ['pull', 'push', 'relay']) {
      const before = await readdir(customDir(b)).catch(() => [] as string[]);
      await lxc.ok(['storage', 'volume', 'copy', 'a:default/vol1', `b:default/vol-${mode}`, '--mode', mode]);
      const got = (await b.api.get(`/1.0/storage-pools/default/volumes/custom/vol-${mode}`)).json.metadata;
      assert.equal(got.config['user.k'], 'v');
      const snaps = (await b.api.get(`/1.0/storage-pools/default/volumes/custom/vol-${mode}/snapshots`)).json.metadata;
      assert.deepEqual(snaps, [`/1.0/storage-pools/default/volumes/custom/vol-${mode}/snapshots/vs1`]);
      const copy = await newVolumeDir(b, before);
      assert.equal(await readFile(path.join(copy, 'data'), 'utf8'), 'second\n');
      // the snapshot holds its own content: restore and look
      assert.equal(
        (await b.api.put(`/1.0/storage-pools/default/volumes/custom/vol-${mode}`, { restore: 'vs1' })).status,
        200,
      );
      assert.equal(await readFile(path.join(copy, 'data'), 'utf8'), 'first\n');
    }
    await lxc.ok(['storage', 'volume', 'move', 'a:default/vol1', 'b:default/vol-moved']);
    assert.equal((await a.api.get('/1.0/storage-pools/default/volumes/custom/vol1')).status, 404);
    assert.equal((await b.api.get('/1.0/storage-pools/default/volumes/custom/vol-moved')).status, 200);
  });

  /** Staging marks and container volumes without a row on `h`. */
  async function leftovers(h: Host): Promise<string[]> {
    const marks = await readdir(path.join(h.daemon.stateDir, 'migrations')).catch(() => [] as string[]);
    const vols = await readdir(path.join(h.daemon.stateDir, 'storage-pools', 'default', 'containers')).catch(
      () => [] as string[],
    );
    const rows = (await h.api.get('/1.0/containers?recursion=1')).json.metadata as any[];
    const ids = new Set<string>();
    for (const r of rows) ids.add(r.name);
    // volume dirs are ids: compare the count with the rows'
    return [
      ...marks.map((m) => `mark ${m}`),
      ...(vols.length > rows.length ? [`${vols.length - rows.length} volume(s) without a row`] : []),
    ];
  }

  test('nothing left over on the sink after all this', async () => {
    await eventually(async () => (await leftovers(b)).length === 0, 'no leftovers on b');
  });
});
