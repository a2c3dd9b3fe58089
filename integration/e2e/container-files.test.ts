/**
 * The container files API (`/1.0/containers/<name>/files?path=`) against the daemon as a process on
 * real LXC with the busybox image: running and stopped, privileged and unprivileged containers.
 * Ownership is checked as the container sees it: with `stat` run inside (lxc-attach) when it runs,
 * on its rootfs on disk when stopped (the rootfs is idmapped at mount time only, so on disk the ids
 * are the container's own). Symlinks planted in the container (absolute, relative with many `..`,
 * to a host directory) and a directory swapped for a symlink while requests run must never lead to
 * a host file: the host's /etc/shadow never appears in an answer, a host canary directory is never
 * written; kernel pseudo file systems (/proc, /sys) of a running container are refused. `after` tears everything down (containers, monitors, mounts, temp dirs), also on failure.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runInContainer } from '../../src/host/lxc/attach.ts';
import { lxcIdOf, rootfsDirOf, teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client, type Reply } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container files e2e tests: ${skip}`);

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Ct {
  name: string;
  privileged: boolean;
  running: boolean;
  id: string;
  rootfs: string;
}

const CONFIGS = [
  { name: 'urun', privileged: false, running: true },
  { name: 'prun', privileged: true, running: true },
  { name: 'ustop', privileged: false, running: false },
  { name: 'pstop', privileged: true, running: false },
] as const;

describe('container files API on real LXC', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let work: string;
  /** Stands for the host: symlinks in containers point here; nothing may ever be written into it. */
  let canary: string;
  let hostShadow: string;
  const cts = new Map<string, Ct>();
  /** Every answer body, to check that the host's /etc/shadow never appears in one. */
  const seen: Buffer[] = [];

  const url = (name: string, p: string) => `/1.0/containers/${name}/files?path=${encodeURIComponent(p)}`;
  const keep = (r: Reply) => (seen.push(r.body ?? Buffer.alloc(0)), r);
  const get = async (name: string, p: string) => keep(await api.get(url(name, p)));
  const post = async (name: string, p: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    keep(await api.post(url(name, p), body, headers));
  const del = async (name: string, p: string) => keep(await api.delete(url(name, p)));

  /** uid, gid and octal mode of `p` as the container sees them. */
  async function insideStat(ct: Ct, p: string): Promise<string> {
    if (ct.running) {
      const out = await runInContainer({
        name: ct.id,
        lxcPath: path.join(d.stateDir, 'containers'),
        command: ['/bin/busybox', 'stat', '-c', '%u %g %a', p],
      });
      return out.trim();
    }
    const st = fs.lstatSync(path.join(ct.rootfs, p));
    return `${st.uid} ${st.gid} ${(st.mode & 0o7777).toString(8)}`;
  }

  const assertOk = (r: Reply) => assert.equal(r.status, 200, r.text);
  const header = (r: Reply, h: string) => r.headers[h.toLowerCase()];
  const ownerOf = (r: Reply) =>
    ['uid', 'gid', 'mode', 'type'].map((k) => {
      assert.equal(header(r, `x-svc-${k}`), header(r, `x-lxd-${k}`), `X-SVC-${k} and X-LXD-${k} agree`);
      return header(r, `x-lxd-${k}`);
    });

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-files-'));
    canary = await mkdtemp(path.join(os.tmpdir(), 'svcd-files-canary-'));
    hostShadow = await readFile('/etc/shadow', 'utf8');
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    await uploadBusybox(api, work);
    // A custom volume, mounted idmapped into the unprivileged running container.
    assert.equal((await api.post('/1.0/storage-pools/default/volumes/custom', { name: 'filesvol' })).status, 200);
    for (const cfg of CONFIGS) {
      const devices =
        cfg.name === 'urun' ? { vol: { type: 'disk', pool: 'default', source: 'filesvol', path: '/mnt/vol' } } : {};
      await waitOp(
        api,
        await api.post('/1.0/containers', {
          name: cfg.name,
          source: { type: 'image', alias: 'bb' },
          config: cfg.privileged ? { 'security.privileged': 'true' } : {},
          devices,
        }),
      );
      if (cfg.running) {
        await waitOp(api, await api.put(`/1.0/containers/${cfg.name}/state`, { action: 'start' }));
        await eventually(
          async () => (await api.get(`/1.0/containers/${cfg.name}/state`)).json.metadata.pid > 0,
          `${cfg.name} running`,
          30_000,
        );
      }
      const id = await lxcIdOf(d.stateDir, cfg.name);
      cts.set(cfg.name, { ...cfg, id, rootfs: await rootfsDirOf(d.stateDir, id) });
    }
  });

  after(async () => {
    try {
      const firstLine = hostShadow.split('\n')[0]!;
      for (const b of seen) assert.ok(!b.includes(firstLine), 'the host /etc/shadow appeared in an answer');
      assert.deepEqual(await readdir(canary).catch(() => []), [], 'the host canary directory was written');
    } finally {
      await teardownContainers(d, api, [work, canary]);
    }
  });

  for (const cfg of CONFIGS) {
    const what = `${cfg.privileged ? 'privileged' : 'unprivileged'} ${cfg.running ? 'running' : 'stopped'} container`;
    describe(what, () => {
      const ct = () => cts.get(cfg.name)!;
      const n = cfg.name;

      test('a file: created with X-LXD-* headers, read back with both header sets, overwritten keeping owner and mode, appended to', async () => {
        assertOk(
          await post(n, '/root/f.txt', 'hello', { 'X-Lxd-Uid': '1000', 'x-lxd-gid': '1001', 'X-LXD-Mode': '0640' }),
        );
        let r = await get(n, '/root/f.txt');
        assertOk(r);
        assert.equal(r.text, 'hello');
        assert.deepEqual(ownerOf(r), ['1000', '1001', '0640', 'file']);
        assert.equal(header(r, 'content-type'), 'application/octet-stream');
        assert.equal(header(r, 'content-length'), '5');
        assert.equal(await insideStat(ct(), '/root/f.txt'), '1000 1001 640');

        assertOk(await post(n, '/root/f.txt', 'bye', { 'X-SVC-write': 'overwrite' }));
        assert.equal(
          await insideStat(ct(), '/root/f.txt'),
          '1000 1001 640',
          'an overwrite without headers keeps owner and mode',
        );
        assertOk(await post(n, '/root/f.txt', ' and more', { 'X-SVC-Write': 'append' }));
        r = await get(n, '/root/f.txt');
        assert.equal(r.text, 'bye and more');
        assert.deepEqual(ownerOf(r), ['1000', '1001', '0640', 'file']);

        assertOk(await post(n, '/root/new.txt', ''));
        r = await get(n, '/root/new.txt');
        assert.deepEqual([r.status, r.text, ...ownerOf(r)], [200, '', '0', '0', '0644', 'file']);
        assert.equal(await insideStat(ct(), '/root/new.txt'), '0 0 644');
        assertOk(await post(n, '/root/new.txt', 'x', { 'X-SVC-uid': '33', 'X-SVC-gid': '44', 'X-SVC-mode': '0600' }));
        assert.equal(await insideStat(ct(), '/root/new.txt'), '33 44 600');
      });

      test('directories and symlinks', async () => {
        assertOk(await post(n, '/root/dir', '', { 'X-LXD-type': 'directory', 'X-LXD-uid': '5', 'X-LXD-mode': '0750' }));
        assert.equal(await insideStat(ct(), '/root/dir'), '5 0 750');
        assertOk(await post(n, '/root/dir', '', { 'X-LXD-type': 'directory' }));
        assert.equal(await insideStat(ct(), '/root/dir'), '5 0 750', 'an existing directory is fine and left as it is');
        assertOk(await post(n, '/root/dir/plain', ''));
        assertOk(await post(n, '/root/dir/sub', '', { 'X-SVC-type': 'directory' }));
        assert.equal(await insideStat(ct(), '/root/dir/sub'), '0 0 755');
        assertOk(
          await post(n, '/root/dir/link', '../f.txt', { 'X-LXD-type': 'symlink', 'X-LXD-uid': '7', 'X-LXD-gid': '8' }),
        );

        let r = await get(n, '/root/dir');
        assertOk(r);
        assert.equal(r.json.type, 'sync');
        assert.deepEqual(r.json.metadata, ['link', 'plain', 'sub']);
        assert.deepEqual(ownerOf(r), ['5', '0', '0750', 'directory']);
        r = await get(n, '/root/dir/link');
        assertOk(r);
        assert.equal(r.text, '../f.txt');
        assert.deepEqual(ownerOf(r).slice(0, 2).concat(ownerOf(r)[3]!), ['7', '8', 'symlink']);
        // Through the symlink as a directory on the way: its target is read.
        r = await get(n, '/root/dir/link/');
        assert.equal(r.text, '../f.txt', 'the final component is never followed');
        assertOk(await post(n, '/root/dir/link', 'sub', { 'X-LXD-type': 'symlink' }));
        assert.equal((await get(n, '/root/dir/link')).text, 'sub', 'a symlink is replaced by a new one');
        assertOk(await post(n, '/root/dir/link/inner', 'through a link to a directory'));
        assert.equal((await get(n, '/root/dir/sub/inner')).text, 'through a link to a directory');
      });

      test('delete: files, symlinks (not their target), empty directories only', async () => {
        assertOk(await post(n, '/root/del', '', { 'X-SVC-type': 'directory' }));
        assertOk(await post(n, '/root/del/f', 'x'));
        assertOk(await post(n, '/root/del/l', '/root/del/f', { 'X-SVC-type': 'symlink' }));
        assert.match(expectError(await del(n, '/root/del'), 400), /not empty/);
        assertOk(await del(n, '/root/del/l'));
        assert.equal((await get(n, '/root/del/f')).text, 'x', 'deleting a symlink leaves its target');
        expectError(await get(n, '/root/del/l'), 404);
        assertOk(await del(n, '/root/del/f'));
        assertOk(await del(n, '/root/del'));
        expectError(await get(n, '/root/del'), 404);
        expectError(await del(n, '/root/del'), 404);
        expectError(await del(n, '/'), 400);
      });

      test('bad requests: clear errors, nothing written', async () => {
        assert.match(expectError(await api.get(`/1.0/containers/${n}/files`), 400), /path/);
        assert.equal(
          (await get(n, 'root/f.txt')).text,
          'bye and more',
          'a relative path counts from the root (the lxc CLI sends them)',
        );
        assert.match(expectError(await post(n, '/nope/x', 'x'), 404), /nope/);
        expectError(await get(n, '/root/missing'), 404);
        assert.match(expectError(await post(n, '/root/bad', 'x', { 'X-SVC-uid': 'abc' }), 400), /uid/);
        assert.match(expectError(await post(n, '/root/bad', 'x', { 'X-LXD-gid': '-5' }), 400), /gid/);
        assert.match(expectError(await post(n, '/root/bad', 'x', { 'X-SVC-mode': '0999' }), 400), /mode/);
        assert.match(expectError(await post(n, '/root/bad', 'x', { 'X-SVC-type': 'fifo' }), 400), /type/);
        assert.match(expectError(await post(n, '/root/bad', 'x', { 'X-SVC-write': 'prepend' }), 400), /write/);
        assert.match(expectError(await post(n, '/root', 'x'), 400), /directory/);
        assert.match(expectError(await post(n, '/root/bad', '', { 'X-SVC-type': 'symlink' }), 400), /target/);
        if (cfg.privileged) {
          assertOk(await post(n, '/root/high-uid', 'x', { 'X-SVC-uid': '70000' }));
          assert.equal(await insideStat(ct(), '/root/high-uid'), '70000 0 644');
          assertOk(await del(n, '/root/high-uid'));
        } else
          assert.match(
            expectError(await post(n, '/root/bad', 'x', { 'X-SVC-uid': '70000' }), 400),
            /uid 70000 is not mapped in the container/,
          );
        expectError(await get(n, '/root/bad'), 404);
        expectError(await api.get(url('no-such-container', '/etc/passwd')), 404);
      });

      test('planted symlinks never lead out of the container', async () => {
        const mine = `shadow of ${n}`;
        assertOk(await post(n, '/etc/shadow', mine, { 'X-SVC-mode': '0600' }));
        assertOk(await post(n, '/evil-abs', '/etc', { 'X-SVC-type': 'symlink' }));
        assertOk(
          await post(n, '/root/evil-rel', '../../../../../../../../../../../../etc', { 'X-SVC-type': 'symlink' }),
        );
        assertOk(await post(n, '/host-dir', canary, { 'X-SVC-type': 'symlink' }));
        assertOk(await post(n, '/loop', '/loop', { 'X-SVC-type': 'symlink' }));
        for (const p of [
          '/evil-abs/shadow',
          '/root/evil-rel/shadow',
          '/root/../../../../etc/shadow',
          '/evil-abs/../../../etc/shadow',
        ]) {
          const r = await get(n, p);
          assert.equal(r.text, mine, p);
        }
        expectError(await get(n, '/host-dir/x'), 404);
        expectError(await post(n, '/host-dir/pwned', 'pwned'), 404);
        expectError(await post(n, '/host-dir/../pwned', ''), 404);
        // The final component as a symlink out of the container: written through? never: refused.
        assert.match(expectError(await post(n, '/host-dir', 'pwned'), 400), /symlink/);
        assert.match(expectError(await post(n, '/host-dir', 'pwned', { 'X-SVC-write': 'append' }), 400), /symlink/);
        assert.match(expectError(await post(n, '/loop/x', 'x'), 400), /symbolic links/);
        assert.equal(
          (await get(n, '/host-dir')).text,
          canary,
          'GET of the symlink gives its target, not what it names on the host',
        );
        assertOk(await del(n, '/host-dir'));
        assert.ok(fs.existsSync(canary), 'deleting the symlink leaves the host directory');
        assert.deepEqual(await readdir(canary), []);
      });

      test('sizes around the small-file limit (read and written whole below it, streamed above): round trip and append', async () => {
        for (const size of [0, 1, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 200 * 1024]) {
          const data = randomBytes(size);
          assertOk(await post(n, '/root/edge.bin', data));
          const r = await get(n, '/root/edge.bin');
          assertOk(r);
          assert.equal(header(r, 'content-length'), String(size), `size ${size}`);
          assert.equal(sha256(r.body ?? Buffer.alloc(0)), sha256(data), `size ${size}`);
          const more = randomBytes(1000);
          assertOk(await post(n, '/root/edge.bin', more, { 'X-SVC-write': 'append' }));
          assert.equal(
            sha256((await get(n, '/root/edge.bin')).body!),
            sha256(Buffer.concat([data, more])),
            `append to size ${size}`,
          );
        }
        assertOk(await del(n, '/root/edge.bin'));
      });

      test('64 MiB round trip, hash-equal', async () => {
        const data = randomBytes(64 * MiB);
        assertOk(await post(n, '/root/big.bin', data));
        const r = await get(n, '/root/big.bin');
        assertOk(r);
        assert.equal(header(r, 'content-length'), String(64 * MiB));
        assert.equal(sha256(r.body!), sha256(data));
        assertOk(await del(n, '/root/big.bin'));
      });

      test('a directory swapped for a symlink to / while requests run never reaches the host', async () => {
        // Swapped on disk in the rootfs, which the running container shares: `/race/d` is either a
        // directory holding etc/shadow (in-container content) or a symlink to `/` (or to the host
        // canary directory); requests resolve `/race/d/etc/shadow` and write `/race/d/w-N`.
        const race = path.join(ct().rootfs, 'race');
        fs.mkdirSync(path.join(race, 'real/etc'), { recursive: true });
        fs.writeFileSync(path.join(race, 'real/etc/shadow'), 'in-container race file');
        fs.symlinkSync('/', path.join(race, 'to-root'));
        fs.symlinkSync(canary, path.join(race, 'to-host'));
        fs.renameSync(path.join(race, 'real'), path.join(race, 'd'));
        let stop = false;
        const swapper = (async () => {
          let i = 0;
          while (!stop) {
            const link = i++ % 2 === 0 ? 'to-root' : 'to-host';
            fs.renameSync(path.join(race, 'd'), path.join(race, 'real'));
            fs.renameSync(path.join(race, link), path.join(race, 'd'));
            await new Promise((r) => setImmediate(r));
            fs.renameSync(path.join(race, 'd'), path.join(race, link));
            fs.renameSync(path.join(race, 'real'), path.join(race, 'd'));
            await new Promise((r) => setImmediate(r));
          }
        })();
        const answers = new Map<string, number>();
        try {
          for (let i = 0; i < 150; i++) {
            const [r, w] = await Promise.all([get(n, '/race/d/etc/shadow'), post(n, `/race/d/w-${i}`, 'race write')]);
            const key = `${r.status}:${r.status === 200 ? r.text : ''} / ${w.status}`;
            answers.set(key, (answers.get(key) ?? 0) + 1);
            assert.ok([200, 404, 400].includes(r.status) && [200, 404, 400].includes(w.status), key);
            if (r.status === 200) assert.ok(['in-container race file', `shadow of ${n}`].includes(r.text), r.text);
          }
        } finally {
          stop = true;
          await swapper;
        }
        assert.deepEqual(await readdir(canary), [], `host canary untouched (answers: ${JSON.stringify([...answers])})`);
        fs.rmSync(race, { recursive: true, force: true });
      });

      if (cfg.name === 'urun') {
        test('an idmapped custom volume in the unprivileged running container: created through its host directory, owned as set', async () => {
          assertOk(
            await post(n, '/mnt/vol/f', 'on the volume', {
              'X-SVC-uid': '1000',
              'X-SVC-gid': '1000',
              'X-SVC-mode': '0600',
            }),
          );
          assert.equal(await insideStat(ct(), '/mnt/vol/f'), '1000 1000 600');
          assertOk(await post(n, '/mnt/vol/d', '', { 'X-SVC-type': 'directory', 'X-SVC-uid': '33' }));
          assertOk(await post(n, '/mnt/vol/d/l', '../f', { 'X-SVC-type': 'symlink' }));
          assert.equal(await insideStat(ct(), '/mnt/vol/d'), '33 0 755');
          const r = await get(n, '/mnt/vol/d/l');
          assert.deepEqual([r.text, ...ownerOf(r).slice(0, 2)], ['../f', '0', '0']);
          assertOk(await post(n, '/mnt/vol/f', 'overwritten'));
          assert.equal(await insideStat(ct(), '/mnt/vol/f'), '1000 1000 600');
          assert.equal((await get(n, '/mnt/vol/f')).text, 'overwritten');
          assert.equal(
            fs.existsSync(path.join(ct().rootfs, 'mnt/vol/f')),
            false,
            'on the volume, not the rootfs below it',
          );
          for (const p of ['/mnt/vol/d/l', '/mnt/vol/d', '/mnt/vol/f']) assertOk(await del(n, p));
          assert.deepEqual((await get(n, '/mnt/vol')).json.metadata, []);
        });
      }

      if (cfg.running) {
        test("running: the container's mounts are seen, and ids set inside are reported as inside", async () => {
          const r = await get(n, '/dev');
          assertOk(r);
          assert.ok(
            r.json.metadata.includes('null'),
            "the container's /dev tmpfs is seen: its mount namespace is used",
          );
          assert.deepEqual(
            fs.readdirSync(path.join(ct().rootfs, 'dev')).includes('null'),
            false,
            'the rootfs below has no /dev/null',
          );
          // Kernel pseudo file systems are refused: svcd reads as host root, /proc/kcore and sysfs are the host's.
          for (const p of [
            '/proc/kcore',
            '/proc/self/status',
            '/proc/sys/kernel/hostname',
            '/sys/kernel/uevent_seqnum',
            '/sys/fs/cgroup',
          ]) {
            assert.match(
              expectError(await get(n, p), 400),
              /is on a (proc|sysfs) file system .* regular file systems only/,
              p,
            );
          }
          assert.match(
            expectError(await post(n, '/proc/sys/kernel/hostname', 'x', { 'X-SVC-write': 'append' }), 400),
            /proc file system/,
          );
          assert.match(expectError(await get(n, '/proc'), 400), /proc file system/);
          const lxcPath = path.join(d.stateDir, 'containers');
          await runInContainer({
            name: ct().id,
            lxcPath,
            command: [
              '/bin/busybox',
              'sh',
              '-c',
              'echo made inside > /root/inside && chown 33:44 /root/inside && chmod 0604 /root/inside',
            ],
          });
          const f = await get(n, '/root/inside');
          assert.deepEqual([f.text, ...ownerOf(f)], ['made inside\n', '33', '44', '0604', 'file']);
          // On disk the rootfs keeps the container's own ids (idmapped at mount time only).
          const st = fs.statSync(path.join(ct().rootfs, 'root/inside'));
          assert.deepEqual([st.uid, st.gid], [33, 44]);
          // /dev is a tmpfs mounted for the container, not on the rootfs. In an unprivileged container
          // it belongs to the container's user namespace, where the host cannot create entries (the
          // kernel answers EOVERFLOW): a clear 400; what is there can still be read, appended, deleted.
          if (cfg.privileged) {
            assertOk(await post(n, '/dev/svcd-test', 'on tmpfs', { 'X-SVC-uid': '12', 'X-SVC-mode': '0640' }));
            assert.equal(await insideStat(ct(), '/dev/svcd-test'), '12 0 640');
          } else {
            assert.match(
              expectError(await post(n, '/dev/svcd-test', 'on tmpfs'), 400),
              /mounted by the unprivileged container/,
            );
            await runInContainer({
              name: ct().id,
              lxcPath,
              command: [
                '/bin/busybox',
                'sh',
                '-c',
                'echo -n on tmpfs > /dev/svcd-test && chown 12:0 /dev/svcd-test && chmod 0640 /dev/svcd-test',
              ],
            });
            assertOk(await post(n, '/dev/svcd-test', ', appended', { 'X-SVC-write': 'append' }));
          }
          const t = await get(n, '/dev/svcd-test');
          assert.deepEqual(
            [t.text, ...ownerOf(t)],
            [cfg.privileged ? 'on tmpfs' : 'on tmpfs, appended', '12', '0', '0640', 'file'],
          );
          assert.equal(
            fs.existsSync(path.join(ct().rootfs, 'dev/svcd-test')),
            false,
            'it is on the tmpfs, not the rootfs below it',
          );
          assertOk(await del(n, '/dev/svcd-test'));
          expectError(await get(n, '/dev/svcd-test'), 404);
        });
      }
    });
  }

  test('a container stopped and started again: files written while stopped are there, owned as set', async () => {
    assertOk(await post('ustop', '/root/before-start', 'x', { 'X-SVC-uid': '1000', 'X-SVC-gid': '1000' }));
    await waitOp(api, await api.put('/1.0/containers/ustop/state', { action: 'start' }));
    await eventually(
      async () => (await api.get('/1.0/containers/ustop/state')).json.metadata.pid > 0,
      'ustop running',
      30_000,
    );
    const ct = { ...cts.get('ustop')!, running: true };
    assert.equal(await insideStat(ct, '/root/before-start'), '1000 1000 644');
    assert.deepEqual(ownerOf(await get('ustop', '/root/before-start')).slice(0, 2), ['1000', '1000']);
  });
});
