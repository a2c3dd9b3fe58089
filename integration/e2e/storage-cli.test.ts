import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { cleanupStorageUnder, loopsUnder, mountsUnder } from '../support/storage-host.ts';

const run = promisify(execFile);

/** The pool as CLI 5.0.2 can print it: it has no `status_detail` field. */
const cliView = ({ status_detail: _, ...rest }: Record<string, unknown>) => rest;
const MiB = 1024 * 1024;

/** `5.81MiB` / `256.00MiB` (as `lxc storage info` prints sizes) → bytes. */
function cliBytes(text: string): number {
  const m = /^([\d.]+)\s*(B|KiB|MiB|GiB|TiB|kB|MB|GB|TB)$/.exec(text.trim());
  assert.ok(m, `a size: ${JSON.stringify(text)}`);
  const units: Record<string, number> = {
    B: 1,
    KiB: 2 ** 10,
    MiB: 2 ** 20,
    GiB: 2 ** 30,
    TiB: 2 ** 40,
    kB: 1e3,
    MB: 1e6,
    GB: 1e9,
    TB: 1e12,
  };
  return Number(m[1]) * units[m[2]!]!;
}

/** The referenced-size limit btrfs enforces on a subvolume (bytes), or undefined for none. */
async function qgroupLimit(subvolume: string): Promise<number | undefined> {
  const { stdout } = await run('btrfs', ['qgroup', 'show', '-rf', '--raw', subvolume]);
  const row = stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((c) => /^0\/\d+$/.test(c[0] ?? ''));
  assert.ok(row, `a qgroup row for ${subvolume}:\n${stdout}`);
  return row[3] === 'none' ? undefined : Number(row[3]);
}

describe('the real lxc CLI (5.0.2) drives storage pools and volumes on svcd', () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  let poolsDir: string;
  let disksDir: string;
  /** Host directory (stable id) of each volume, by the name it had when it was found. */
  const ids = new Map<string, string>();

  const pool = async (name: string) => {
    const res = await api.get(`/1.0/storage-pools/${name}`);
    assert.equal(res.status, 200, res.text);
    return res.json.metadata;
  };
  const volume = async (p: string, name: string) => {
    const res = await api.get(`/1.0/storage-pools/${p}/volumes/custom/${name}`);
    assert.equal(res.status, 200, res.text);
    return res.json.metadata;
  };
  const volumeNames = async (p: string) => {
    const res = await api.get(`/1.0/storage-pools/${p}/volumes?recursion=1`);
    assert.equal(res.status, 200, res.text);
    return (res.json.metadata as { name: string }[]).map((v) => v.name).sort();
  };
  /** Volume directories (ids) in a pool on the host, without leftovers of copies in progress. */
  const hostVolumes = async (p: string) =>
    (await readdir(path.join(poolsDir, p, 'custom'))).filter((e) => !e.includes('.')).sort();
  const mountOf = async (p: string) =>
    (await mountsUnder(d.stateDir)).find((m) => m.mountPoint === path.join(poolsDir, p));
  const exists = (p: string) =>
    stat(p).then(
      () => true,
      () => false,
    );

  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
    poolsDir = path.join(d.stateDir, 'storage-pools');
    disksDir = path.join(d.stateDir, 'disks');
  });
  after(async () => {
    // Through the API first (volumes, then pools); then, whatever is left on the host under our
    // own state directory; only then may the state directory be removed.
    try {
      if (d && d.proc.exitCode === null) {
        for (const p of ['b1', 'p1', 'x']) {
          const vols = await api.get(`/1.0/storage-pools/${p}/volumes/custom`).catch(() => undefined);
          for (const v of vols?.status === 200 ? (vols.json.metadata as string[]) : [])
            await api.delete(v).catch(() => {});
          await api.delete(`/1.0/storage-pools/${p}`).catch(() => {});
        }
      }
    } finally {
      await d?.stop().catch(() => {});
      if (d) {
        const left = await cleanupStorageUnder(d.stateDir);
        if (left.length) console.error(`storage-cli: fallback cleanup had to: ${left.join('; ')}`);
      }
      await d?.destroy();
      await lxc?.cleanup();
    }
  });

  test('lxc storage list: the default dir pool exists and is CREATED', async () => {
    const csv = (await lxc.ok(['storage', 'list', '--format', 'csv'])).trim().split('\n');
    assert.deepEqual(csv, [`default,dir,${path.join(poolsDir, 'default')},Default svcd storage pool,1,CREATED`]);
    const table = await lxc.ok(['storage', 'list']);
    assert.match(table, /\|\s*default\s*\|\s*dir\s*\|.*\|\s*CREATED\s*\|/);
    const json = JSON.parse(await lxc.ok(['storage', 'list', '--format', 'json']));
    assert.deepEqual(json, (await api.get('/1.0/storage-pools?recursion=1')).json.metadata.map(cliView));
  });

  test('lxc storage create p1 dir: a directory pool under the state directory', async () => {
    assert.match(await lxc.ok(['storage', 'create', 'p1', 'dir']), /Storage pool p1 created/);
    const p = await pool('p1');
    assert.equal(p.driver, 'dir');
    assert.equal(p.status, 'Created');
    assert.deepEqual(p.config, { source: path.join(poolsDir, 'p1') });
    assert.deepEqual(p.used_by, []);
    for (const sub of ['custom', 'custom-snapshots'])
      assert.ok((await stat(path.join(poolsDir, 'p1', sub))).isDirectory(), sub);
    assert.equal(await mountOf('p1'), undefined, 'a dir pool mounts nothing');
  });

  test('lxc storage create b1 btrfs size=256MiB: a loop file, a loop device, a btrfs mount', async () => {
    assert.match(await lxc.ok(['storage', 'create', 'b1', 'btrfs', 'size=256MiB']), /Storage pool b1 created/);
    const p = await pool('b1');
    assert.equal(p.driver, 'btrfs');
    assert.equal(p.status, 'Created');
    const img = path.join(disksDir, 'b1.img');
    assert.deepEqual(p.config, { size: '256MiB', source: img });
    assert.equal((await stat(img)).size, 256 * MiB);
    const loops = await loopsUnder(d.stateDir);
    assert.deepEqual(
      loops.map((l) => l.backingFile),
      [img],
    );
    const m = await mountOf('b1');
    assert.ok(m, 'b1 is mounted at its mount point');
    assert.equal(m.fsType, 'btrfs');
    assert.equal(m.source, loops[0]!.device);
    const names = (await lxc.ok(['storage', 'list', '--format', 'csv']))
      .trim()
      .split('\n')
      .map((l) => l.split(',').slice(0, 2).join(','));
    assert.deepEqual(names, ['b1,btrfs', 'default,dir', 'p1,dir']);
  });

  test('lxc storage show b1 prints the pool as the API has it', async () => {
    const shown = parseYaml(await lxc.ok(['storage', 'show', 'b1']));
    assert.deepEqual(shown, cliView(await pool('b1')));
    assert.equal(shown.status, 'Created');
  });

  test('lxc storage set / get / unset volume.size', async () => {
    await lxc.ok(['storage', 'set', 'b1', 'volume.size', '20MiB']);
    assert.equal((await pool('b1')).config['volume.size'], '20MiB');
    assert.equal((await lxc.ok(['storage', 'get', 'b1', 'volume.size'])).trim(), '20MiB');
    await lxc.ok(['storage', 'unset', 'b1', 'volume.size']);
    assert.equal((await pool('b1')).config['volume.size'], undefined);
    assert.equal((await lxc.ok(['storage', 'get', 'b1', 'volume.size'])).trim(), '');
    assert.deepEqual((await pool('b1')).config, { size: '256MiB', source: path.join(disksDir, 'b1.img') });
    // A bad value is refused by the daemon and nothing changes.
    assert.match(await lxc.fail(['storage', 'set', 'b1', 'volume.size', 'lots']), /volume\.size/);
    assert.equal((await pool('b1')).config['volume.size'], undefined);
    // Shrinking the pool is refused; the loop file keeps its size.
    assert.match(await lxc.fail(['storage', 'set', 'b1', 'size', '200MiB']), /shrink/);
    assert.equal((await pool('b1')).config.size, '256MiB');
    assert.equal((await stat(path.join(disksDir, 'b1.img'))).size, 256 * MiB);
  });

  test('lxc storage info b1 shows the space of the mounted filesystem; lxc storage set b1 size grows it', async () => {
    const res = await eventually(async () => {
      const r = await api.get('/1.0/storage-pools/b1/resources');
      return r.status === 200 ? r : undefined;
    }, 'b1 resources');
    const space = res.json.metadata.space;
    assert.ok(space.total > 200 * MiB && space.total <= 256 * MiB, `total ${space.total}`);
    assert.ok(space.used > 0 && space.used < space.total, `used ${space.used}`);
    const info = parseYaml(await lxc.ok(['storage', 'info', 'b1']));
    assert.equal(info.info.name, 'b1');
    assert.equal(info.info.driver, 'btrfs');
    const total = cliBytes(info.info['total space']);
    assert.ok(Math.abs(total - space.total) <= 0.01 * MiB, `CLI total ${info.info['total space']} vs ${space.total}`);
    const used = cliBytes(info.info['space used']);
    assert.ok(used > 0 && used < total, `CLI used ${info.info['space used']}`);

    // Growing: the loop file, and then the filesystem, get bigger.
    await lxc.ok(['storage', 'set', 'b1', 'size', '300MiB']);
    assert.equal((await pool('b1')).config.size, '300MiB');
    assert.equal((await stat(path.join(disksDir, 'b1.img'))).size, 300 * MiB);
    const grown = await eventually(async () => {
      const r = await api.get('/1.0/storage-pools/b1/resources');
      return r.status === 200 && r.json.metadata.space.total > 256 * MiB ? r.json.metadata.space : undefined;
    }, 'b1 to report the grown size');
    assert.ok(grown.total <= 300 * MiB);
    const again = parseYaml(await lxc.ok(['storage', 'info', 'b1']));
    assert.ok(
      Math.abs(cliBytes(again.info['total space']) - grown.total) <= 0.01 * MiB,
      `CLI total ${again.info['total space']} vs ${grown.total}`,
    );
    assert.equal((await pool('b1')).status, 'Created');
  });

  test('lxc storage volume create b1 v1 size=30MiB: a btrfs subvolume with a 30MiB quota', async () => {
    assert.deepEqual(await hostVolumes('b1'), []);
    assert.match(await lxc.ok(['storage', 'volume', 'create', 'b1', 'v1', 'size=30MiB']), /Storage volume v1 created/);
    const v = await volume('b1', 'v1');
    assert.equal(v.type, 'custom');
    assert.deepEqual(v.config, { size: '30MiB' });
    const [id, ...more] = await hostVolumes('b1');
    assert.ok(id && more.length === 0, 'exactly one volume directory');
    ids.set('v1', id);
    const dir = path.join(poolsDir, 'b1', 'custom', id);
    assert.equal((await stat(dir)).ino, 256, 'the volume is a btrfs subvolume');
    assert.equal(await qgroupLimit(dir), 30 * MiB);
    assert.deepEqual((await pool('b1')).used_by, ['/1.0/storage-pools/b1/volumes/custom/v1']);
  });

  test('lxc storage volume list b1 (it sends filter=) lists v1', async () => {
    const r = await lxc.run(['--debug', 'storage', 'volume', 'list', 'b1', '--format', 'csv']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /\/1\.0\/storage-pools\/b1\/volumes\?filter=&recursion=1/);
    assert.deepEqual(r.stdout.trim().split('\n'), ['custom,v1,,filesystem,0']);
    assert.deepEqual(await volumeNames('b1'), ['v1']);
  });

  test('lxc storage volume show / set / get', async () => {
    const shown = parseYaml(await lxc.ok(['storage', 'volume', 'show', 'b1', 'v1']));
    const { created_at: shownAt, ...rest } = shown;
    const { created_at: apiAt, ...apiRest } = await volume('b1', 'v1');
    assert.deepEqual(rest, apiRest);
    assert.equal(new Date(shownAt).getTime(), new Date(apiAt).getTime());

    await lxc.ok(['storage', 'volume', 'set', 'b1', 'v1', 'user.purpose', 'tests']);
    assert.deepEqual((await volume('b1', 'v1')).config, { size: '30MiB', 'user.purpose': 'tests' });
    assert.equal((await lxc.ok(['storage', 'volume', 'get', 'b1', 'v1', 'user.purpose'])).trim(), 'tests');
    // Changing the size changes the quota on the host.
    await lxc.ok(['storage', 'volume', 'set', 'b1', 'v1', 'size', '40MiB']);
    assert.equal((await volume('b1', 'v1')).config.size, '40MiB');
    assert.equal(await qgroupLimit(path.join(poolsDir, 'b1', 'custom', ids.get('v1')!)), 40 * MiB);
    assert.equal((await lxc.ok(['storage', 'volume', 'get', 'b1', 'v1', 'size'])).trim(), '40MiB');
    assert.match(await lxc.fail(['storage', 'volume', 'set', 'b1', 'v1', 'bogus.key', 'x']), /bogus\.key/);
  });

  test('lxc storage volume rename b1 v1 v2 renames in the database only', async () => {
    const dir = path.join(poolsDir, 'b1', 'custom', ids.get('v1')!);
    await writeFile(path.join(dir, 'note'), 'before');
    await lxc.ok(['storage', 'volume', 'rename', 'b1', 'v1', 'v2']);
    expectError(await api.get('/1.0/storage-pools/b1/volumes/custom/v1'), 404);
    assert.deepEqual((await volume('b1', 'v2')).config, { size: '40MiB', 'user.purpose': 'tests' });
    assert.deepEqual(await hostVolumes('b1'), [ids.get('v1')], 'same stable id on the host');
    assert.equal(await readFile(path.join(dir, 'note'), 'utf8'), 'before');
    ids.set('v2', ids.get('v1')!);
  });

  test('lxc storage volume snapshot b1 v2 s1; lxc storage volume show b1 v2/s1', async () => {
    await lxc.ok(['storage', 'volume', 'snapshot', 'b1', 'v2', 's1']);
    const list = await api.get('/1.0/storage-pools/b1/volumes/custom/v2/snapshots');
    assert.deepEqual(list.json.metadata, ['/1.0/storage-pools/b1/volumes/custom/v2/snapshots/s1']);
    const shown = parseYaml(await lxc.ok(['storage', 'volume', 'show', 'b1', 'v2/s1']));
    assert.equal(shown.name, 's1');
    const snap = (await api.get('/1.0/storage-pools/b1/volumes/custom/v2/snapshots/s1')).json.metadata;
    assert.deepEqual(shown.config, snap.config);
    assert.equal(new Date(shown.created_at).getTime(), new Date(snap.created_at).getTime());
    // On the host: one read-only snapshot subvolume holding the data as it was.
    const parent = path.join(poolsDir, 'b1', 'custom-snapshots', ids.get('v2')!);
    const snaps = await readdir(parent);
    assert.equal(snaps.length, 1);
    assert.equal(await readFile(path.join(parent, snaps[0]!, 'note'), 'utf8'), 'before');
    // The CLI's own list (5.0.2 does not show snapshots there) still shows the one volume.
    assert.deepEqual((await lxc.ok(['storage', 'volume', 'list', 'b1', '--format', 'csv'])).trim().split('\n'), [
      'custom,v2,,filesystem,0',
    ]);
  });

  test('lxc storage volume restore b1 v2 s1 brings the data back', async () => {
    const dir = path.join(poolsDir, 'b1', 'custom', ids.get('v2')!);
    await writeFile(path.join(dir, 'note'), 'after');
    await writeFile(path.join(dir, 'extra'), 'x');
    await lxc.ok(['storage', 'volume', 'restore', 'b1', 'v2', 's1']);
    assert.deepEqual(await hostVolumes('b1'), [ids.get('v2')]);
    assert.equal(await readFile(path.join(dir, 'note'), 'utf8'), 'before');
    assert.equal(await exists(path.join(dir, 'extra')), false);
    assert.equal((await volume('b1', 'v2')).config.size, '40MiB', 'the config is not touched by a restore');
    assert.equal(await qgroupLimit(dir), 40 * MiB, 'the restored subvolume keeps the quota');
    assert.match(await lxc.fail(['storage', 'volume', 'restore', 'b1', 'v2', 'nope']), /not found/);
  });

  test('lxc storage volume copy b1/v2 p1/v3 (btrfs → dir)', async () => {
    const first = await lxc.run(['storage', 'volume', 'copy', 'b1/v2', 'p1/v3']);
    if (first.code !== 0) {
      // The copy carries v2's size, which a dir pool can only enforce with project quotas.
      assert.match(first.stderr, /project quota/i);
      assert.deepEqual(await volumeNames('p1'), [], 'nothing half-made in the database');
      assert.deepEqual(await hostVolumes('p1'), [], 'nothing half-made on the host');
      await lxc.ok(['storage', 'volume', 'unset', 'b1', 'v2', 'size']);
      assert.equal(
        await qgroupLimit(path.join(poolsDir, 'b1', 'custom', ids.get('v2')!)),
        undefined,
        'unset clears the quota',
      );
      assert.match(await lxc.ok(['storage', 'volume', 'copy', 'b1/v2', 'p1/v3']), /copied/);
    }
    assert.deepEqual(await volumeNames('p1'), ['v3']);
    assert.equal((await volume('p1', 'v3')).config['user.purpose'], 'tests', 'the copy takes the source config');
    const [id, ...more] = await hostVolumes('p1');
    assert.ok(id && more.length === 0);
    assert.notEqual(id, ids.get('v2'), 'a copy has its own id');
    ids.set('v3', id);
    assert.equal(await readFile(path.join(poolsDir, 'p1', 'custom', id, 'note'), 'utf8'), 'before');
    assert.deepEqual(await volumeNames('b1'), ['v2'], 'the source stays');
  });

  test('lxc storage volume move p1/v3 b1/v4 (to another pool), then b1/v4 b1/v5 (same pool)', async () => {
    // CLI 5.0.2 moves by copying (POST .../volumes/custom with a copy source) and then deleting
    // the source, even within one pool: the moved volume gets a new id.
    assert.match(await lxc.ok(['storage', 'volume', 'move', 'p1/v3', 'b1/v4']), /moved/);
    assert.deepEqual(await volumeNames('p1'), []);
    assert.deepEqual(await volumeNames('b1'), ['v2', 'v4']);
    assert.deepEqual(await hostVolumes('p1'), [], 'the data left the dir pool');
    const onB1 = await hostVolumes('b1');
    assert.equal(onB1.length, 2);
    assert.ok(onB1.includes(ids.get('v2')!));
    const id = onB1.find((x) => x !== ids.get('v2'))!;
    const dir = path.join(poolsDir, 'b1', 'custom', id);
    assert.equal((await stat(dir)).ino, 256, 'on btrfs it is a subvolume now');
    assert.equal(await readFile(path.join(dir, 'note'), 'utf8'), 'before');
    assert.equal((await volume('b1', 'v4')).config['user.purpose'], 'tests');

    assert.match(await lxc.ok(['storage', 'volume', 'move', 'b1/v4', 'b1/v5']), /moved/);
    assert.deepEqual(await volumeNames('b1'), ['v2', 'v5']);
    const after = await hostVolumes('b1');
    assert.equal(after.length, 2);
    assert.ok(after.includes(ids.get('v2')!));
    const id5 = after.find((x) => x !== ids.get('v2'))!;
    assert.equal(await readFile(path.join(poolsDir, 'b1', 'custom', id5, 'note'), 'utf8'), 'before');
    assert.equal((await volume('b1', 'v5')).config['user.purpose'], 'tests');
  });

  test('lxc storage delete refuses a pool with volumes; volume delete, then pool delete, leave nothing on the host', async () => {
    const img = path.join(disksDir, 'b1.img');
    assert.match(await lxc.fail(['storage', 'delete', 'b1']), /in use/);
    assert.equal((await pool('b1')).status, 'Created');
    assert.deepEqual(await volumeNames('b1'), ['v2', 'v5']);
    assert.ok(await mountOf('b1'), 'still mounted');

    assert.match(await lxc.ok(['storage', 'volume', 'delete', 'b1', 'v2']), /Storage volume v2 deleted/);
    assert.match(await lxc.ok(['storage', 'volume', 'delete', 'b1', 'v5']), /Storage volume v5 deleted/);
    expectError(await api.get('/1.0/storage-pools/b1/volumes/custom/v2'), 404);
    assert.deepEqual(await volumeNames('b1'), []);
    assert.deepEqual(await hostVolumes('b1'), []);
    assert.deepEqual(
      await readdir(path.join(poolsDir, 'b1', 'custom-snapshots')),
      [],
      'snapshots went with the volume',
    );
    assert.deepEqual((await pool('b1')).used_by, []);

    assert.match(await lxc.ok(['storage', 'delete', 'b1']), /Storage pool b1 deleted/);
    expectError(await api.get('/1.0/storage-pools/b1'), 404);
    assert.equal(await mountOf('b1'), undefined, 'unmounted');
    assert.deepEqual(await mountsUnder(d.stateDir), []);
    assert.deepEqual(await loopsUnder(d.stateDir), [], 'loop device detached');
    assert.equal(await exists(img), false, 'loop file removed');
    assert.equal(await exists(path.join(poolsDir, 'b1')), false, 'mount point removed');

    assert.match(await lxc.ok(['storage', 'delete', 'p1']), /Storage pool p1 deleted/);
    expectError(await api.get('/1.0/storage-pools/p1'), 404);
    assert.equal(await exists(path.join(poolsDir, 'p1')), false);
    assert.deepEqual(
      (await lxc.ok(['storage', 'list', '--format', 'csv']))
        .trim()
        .split('\n')
        .map((l) => l.split(',')[0]),
      ['default'],
    );
  });

  test('lxc storage create x lvm fails naming device-mapper; x nosuchdriver fails; nothing is made', async () => {
    const lvm = await lxc.fail(['storage', 'create', 'x', 'lvm']);
    assert.match(lvm, /device-mapper/);
    assert.match(await lxc.fail(['storage', 'create', 'x', 'zfs']), /zfs/);
    assert.match(await lxc.fail(['storage', 'create', 'x', 'nosuchdriver']), /nosuchdriver/);
    expectError(await api.get('/1.0/storage-pools/x'), 404);
    assert.deepEqual((await api.get('/1.0/storage-pools')).json.metadata, ['/1.0/storage-pools/default']);
    assert.deepEqual(await readdir(poolsDir), ['default']);
    assert.deepEqual(await mountsUnder(d.stateDir), []);
    assert.deepEqual(await loopsUnder(d.stateDir), []);
  });

  test('the daemon logged no internal error', async () => {
    const internal = d
      .output()
      .split('\n')
      .filter((l) => /"msg":"request failed"/.test(l));
    assert.deepEqual(internal, []);
  });
});
