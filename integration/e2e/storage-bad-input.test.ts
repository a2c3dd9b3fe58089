import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, type Client, type Reply } from '../support/http.ts';
import { cleanupStorageUnder, loopsUnder, mountsUnder } from '../support/storage-host.ts';

const EXT4_SUPER_MAGIC = 0xef53;
const BTRFS_SUPER_MAGIC = 0x9123683e;
const LONG = 'n'.repeat(65);
const LONGEST = 'm'.repeat(64);

interface Case {
  what: string;
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  status: number;
  /** The error message must match this. */
  mentions?: RegExp;
}

/** What is wrong with a reply to a case (undefined when it is the expected error envelope). */
function envelopeProblem(res: Reply, c: Case): string | undefined {
  const j = res.json;
  if (res.status !== c.status) return `status ${res.status}, expected ${c.status}: ${res.text.slice(0, 300)}`;
  if (j?.type !== 'error') return `not an error envelope: ${res.text.slice(0, 300)}`;
  if (j.error_code !== c.status) return `error_code ${j.error_code} ≠ ${c.status}`;
  if (typeof j.error !== 'string' || j.error.trim() === '') return `empty error message: ${res.text.slice(0, 300)}`;
  if (c.mentions && !c.mentions.test(j.error)) return `message ${JSON.stringify(j.error)} does not match ${c.mentions}`;
  return undefined;
}

describe('storage bad input: exact error envelopes, and nothing half-made in the database or on the host', () => {
  let d: Daemon;
  let api: Client;
  /** A directory outside the state dir holding the `ext` pool's source. */
  let extDir: string;
  /** A plain (non-btrfs) directory outside everything, for host-level refusals. */
  let plainDir: string;
  let stateFs: number;
  let before0: unknown;

  const ok = (r: Reply, what: string) =>
    assert.ok(r.status === 200 || r.status === 202, `${what}: ${r.status} ${r.text}`);
  const waitOp = async (r: Reply, what: string) => {
    assert.equal(r.status, 202, `${what}: ${r.text}`);
    const done = await api.get(`${r.json.operation}/wait?timeout=60`);
    assert.equal(done.json.metadata.status, 'Success', `${what}: ${done.json.metadata.err}`);
  };

  /** Everything the API shows about storage (and the profile that uses a volume), ETags included. */
  async function snapshot(): Promise<unknown> {
    const get = async (p: string) => {
      const r = await api.get(p);
      return { status: r.status, etag: r.headers.etag ?? null, metadata: r.json?.metadata };
    };
    const list = await get('/1.0/storage-pools');
    const pools: Record<string, unknown> = {};
    for (const url of list.metadata as string[]) {
      const vols = await get(`${url}/volumes`);
      const volumes: Record<string, unknown> = {};
      for (const v of vols.metadata as string[])
        volumes[v] = { volume: await get(v), snapshots: await get(`${v}/snapshots?recursion=1`) };
      pools[url] = {
        pool: await get(url),
        volumes: await get(`${url}/volumes?recursion=1`),
        custom: await get(`${url}/volumes/custom`),
        each: volumes,
      };
    }
    return {
      list,
      recursion: await get('/1.0/storage-pools?recursion=1'),
      pools,
      profiles: await get('/1.0/profiles?recursion=1'),
    };
  }

  /** The host matches the pools that exist: their loop files, mounts and loop devices, and nothing else. */
  async function hostProblems(): Promise<string[]> {
    const problems: string[] = [];
    const pools = (await api.get('/1.0/storage-pools?recursion=1')).json.metadata as {
      name: string;
      driver: string;
      config: Record<string, string>;
    }[];
    const btrfsLoop = pools
      .filter((p) => p.driver === 'btrfs' && p.config.source === path.join(d.stateDir, 'disks', `${p.name}.img`))
      .map((p) => p.name)
      .sort();
    const disks = (await readdir(path.join(d.stateDir, 'disks')).catch(() => [] as string[])).sort();
    if (JSON.stringify(disks) !== JSON.stringify(btrfsLoop.map((n) => `${n}.img`)))
      problems.push(`disks/ holds ${JSON.stringify(disks)}`);
    // btrfs pools have their mount point there, dir pools without a source of their own their directory.
    const inState = pools
      .filter((p) => p.driver !== 'dir' || p.config.source === path.join(d.stateDir, 'storage-pools', p.name))
      .map((p) => p.name)
      .sort();
    const dirs = (await readdir(path.join(d.stateDir, 'storage-pools'))).sort();
    if (JSON.stringify(dirs) !== JSON.stringify(inState))
      problems.push(`storage-pools/ holds ${JSON.stringify(dirs)}, pools are ${JSON.stringify(inState)}`);
    const mounts = await mountsUnder(d.stateDir);
    const wantMounts = btrfsLoop.map((n) => path.join(d.stateDir, 'storage-pools', n)).sort();
    if (JSON.stringify(mounts.map((m) => m.mountPoint).sort()) !== JSON.stringify(wantMounts))
      problems.push(`mounts ${JSON.stringify(mounts)}`);
    const loops = await loopsUnder(d.stateDir);
    const wantLoops = btrfsLoop.map((n) => path.join(d.stateDir, 'disks', `${n}.img`)).sort();
    if (
      JSON.stringify(loops.map((l) => l.backingFile).sort()) !== JSON.stringify(wantLoops) ||
      loops.some((l) => l.deleted)
    )
      problems.push(`loop devices ${JSON.stringify(loops)}`);
    for (const m of mounts) {
      if (m.fsType !== 'btrfs') problems.push(`${m.mountPoint} holds ${m.fsType}`);
      const loop = loops.find((l) => l.device === m.source);
      if (!loop || loop.backingFile !== path.join(d.stateDir, 'disks', `${path.basename(m.mountPoint)}.img`))
        problems.push(`${m.mountPoint} is mounted from ${m.source}`);
    }
    const ext = (await readdir(extDir)).sort();
    if (JSON.stringify(ext) !== JSON.stringify(['pool'])) problems.push(`${extDir} holds ${JSON.stringify(ext)}`);
    const plain = (await readdir(plainDir)).sort();
    if (JSON.stringify(plain) !== JSON.stringify(['file.img']))
      problems.push(`${plainDir} holds ${JSON.stringify(plain)}`);
    // One host directory per volume in each pool.
    for (const p of pools) {
      const root =
        p.config.source && p.driver === 'dir' ? p.config.source : path.join(d.stateDir, 'storage-pools', p.name);
      const onHost = (await readdir(path.join(root, 'custom'))).length;
      const inDb = ((await api.get(`/1.0/storage-pools/${p.name}/volumes/custom`)).json.metadata as string[]).length;
      if (onHost !== inDb) problems.push(`pool ${p.name}: ${onHost} volume directories for ${inDb} volumes`);
    }
    return problems;
  }

  async function walk(cases: Case[]): Promise<string[]> {
    const problems: string[] = [];
    for (const c of cases) {
      const res = await api.request(c.method, c.path, c.body, c.headers);
      const p = envelopeProblem(res, c);
      if (p) problems.push(`${c.what} (${c.method} ${c.path.slice(0, 90)}): ${p}`);
    }
    return problems;
  }

  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    extDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-ext-'));
    plainDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-plain-'));
    await writeFile(path.join(plainDir, 'file.img'), Buffer.alloc(1024));
    stateFs = (await statfs(d.stateDir)).type;

    ok(await api.post('/1.0/storage-pools', { name: 'bt', driver: 'btrfs', config: { size: '256MiB' } }), 'create bt');
    ok(await api.post('/1.0/storage-pools', { name: 'dp', driver: 'dir' }), 'create dp');
    ok(
      await api.post('/1.0/storage-pools', {
        name: 'ext',
        driver: 'dir',
        config: { source: path.join(extDir, 'pool') },
      }),
      'create ext',
    );
    ok(
      await api.post('/1.0/storage-pools/bt/volumes/custom', { name: 'vol1', config: { size: '20MiB' } }),
      'create bt/vol1',
    );
    await waitOp(
      await api.post('/1.0/storage-pools/bt/volumes/custom/vol1/snapshots', { name: 'snap1' }),
      'snapshot bt/vol1',
    );
    ok(await api.post('/1.0/storage-pools/dp/volumes', { name: 'vol2', type: 'custom' }), 'create dp/vol2');
    ok(await api.post('/1.0/storage-pools/dp/volumes/custom', { name: LONGEST }), 'a 64-character volume name is fine');
    ok(await api.post('/1.0/storage-pools/ext/volumes/custom', { name: 'vol3' }), 'create ext/vol3');
    ok(
      await api.post('/1.0/profiles', {
        name: 'uses',
        devices: { data: { type: 'disk', pool: 'bt', source: 'vol1', path: '/mnt' } },
      }),
      'create profile uses',
    );
    before0 = await snapshot();
    // The fixtures are there, so the cases below really target existing objects.
    const s = before0 as {
      list: { metadata: string[] };
      pools: Record<string, { pool: { metadata: { status: string; used_by: string[] } } }>;
    };
    assert.deepEqual(s.list.metadata, [
      '/1.0/storage-pools/bt',
      '/1.0/storage-pools/default',
      '/1.0/storage-pools/dp',
      '/1.0/storage-pools/ext',
    ]);
    for (const p of Object.values(s.pools)) assert.equal(p.pool.metadata.status, 'Created');
    assert.deepEqual(s.pools['/1.0/storage-pools/bt']!.pool.metadata.used_by, [
      '/1.0/profiles/uses',
      '/1.0/storage-pools/bt/volumes/custom/vol1',
    ]);
    assert.deepEqual(await hostProblems(), []);
  });

  after(async () => {
    try {
      if (d && d.proc.exitCode === null) {
        await api.delete('/1.0/profiles/uses').catch(() => {});
        const pools = (await api.get('/1.0/storage-pools').catch(() => undefined))?.json?.metadata ?? [];
        for (const url of pools as string[]) {
          if (url === '/1.0/storage-pools/default') continue;
          const vols = (await api.get(`${url}/volumes/custom`).catch(() => undefined))?.json?.metadata ?? [];
          for (const v of vols as string[]) await api.delete(v).catch(() => {});
          await api.delete(url).catch(() => {});
        }
      }
    } finally {
      await d?.stop().catch(() => {});
      if (d) {
        const left = await cleanupStorageUnder(d.stateDir);
        if (left.length) console.error(`storage-bad-input: fallback cleanup had to: ${left.join('; ')}`);
      }
      await d?.destroy();
      if (extDir) await rm(extDir, { recursive: true, force: true });
      if (plainDir) await rm(plainDir, { recursive: true, force: true });
    }
  });

  const P = '/1.0/storage-pools';
  const pool = (name: string, driver: string, config?: Record<string, string>) => ({
    name,
    driver,
    ...(config ? { config } : {}),
  });
  const btrfs = (name: string, config: Record<string, string> = {}) =>
    pool(name, 'btrfs', { size: '200MiB', ...config });

  test('pool names: `/` (in bodies and as %2F in paths), `..`, spaces, 65+ characters', async () => {
    const cases: Case[] = [
      { what: 'slash', method: 'POST', path: P, body: pool('a/b', 'dir'), status: 400, mentions: /a\/b/ },
      { what: 'slash (btrfs)', method: 'POST', path: P, body: btrfs('a/b'), status: 400, mentions: /a\/b/ },
      { what: 'dot-dot prefix', method: 'POST', path: P, body: pool('../etc', 'dir'), status: 400 },
      { what: 'dot-dot', method: 'POST', path: P, body: pool('..', 'dir'), status: 400, mentions: /\.\./ },
      { what: 'dot', method: 'POST', path: P, body: pool('.', 'dir'), status: 400 },
      { what: 'dot-dot (btrfs)', method: 'POST', path: P, body: btrfs('..'), status: 400 },
      { what: 'space', method: 'POST', path: P, body: pool('a b', 'dir'), status: 400 },
      { what: 'only a space', method: 'POST', path: P, body: pool(' ', 'dir'), status: 400 },
      { what: 'empty', method: 'POST', path: P, body: pool('', 'dir'), status: 400 },
      { what: 'missing name', method: 'POST', path: P, body: { driver: 'dir' }, status: 400 },
      { what: 'number name', method: 'POST', path: P, body: { name: 5, driver: 'dir' }, status: 400 },
      { what: '65 characters', method: 'POST', path: P, body: pool(LONG, 'dir'), status: 400, mentions: /too long/ },
      { what: '65 characters (btrfs)', method: 'POST', path: P, body: btrfs(LONG), status: 400, mentions: /too long/ },
      { what: '200 characters', method: 'POST', path: P, body: pool('p'.repeat(200), 'dir'), status: 400 },
      { what: 'newline', method: 'POST', path: P, body: pool('a\nb', 'dir'), status: 400 },
      { what: 'non-ASCII', method: 'POST', path: P, body: pool('pöol', 'dir'), status: 400 },
      { what: 'existing (dir)', method: 'POST', path: P, body: pool('dp', 'dir'), status: 409 },
      { what: 'existing (btrfs over dir)', method: 'POST', path: P, body: btrfs('dp'), status: 409 },
      { what: 'existing default', method: 'POST', path: P, body: pool('default', 'dir'), status: 409 },
      { what: 'bad JSON', method: 'POST', path: P, body: '{"name":', status: 400 },
      { what: 'array body', method: 'POST', path: P, body: '[]', status: 400 },
      {
        what: 'config value not a string',
        method: 'POST',
        path: P,
        body: { name: 'x', driver: 'btrfs', config: { size: 300 } },
        status: 400,
      },
      // In paths: an encoded slash stays inside the name, which no pool can have.
      { what: '%2F GET', method: 'GET', path: `${P}/a%2Fb`, status: 404 },
      { what: '%2F into a real pool', method: 'GET', path: `${P}/bt%2Fvolumes`, status: 404 },
      { what: '%2F PUT', method: 'PUT', path: `${P}/a%2Fb`, body: { config: {} }, status: 404 },
      {
        what: '%2F PATCH escaping',
        method: 'PATCH',
        path: `${P}/dp%2F..%2Fbt`,
        body: { config: { 'volume.size': '1GiB' } },
        status: 404,
      },
      { what: '%2F DELETE', method: 'DELETE', path: `${P}/a%2Fb`, status: 404 },
      { what: 'trailing %2F DELETE', method: 'DELETE', path: `${P}/bt%2F`, status: 404 },
      { what: '%2F resources', method: 'GET', path: `${P}/a%2Fb/resources`, status: 404 },
      { what: '%2F volumes', method: 'POST', path: `${P}/a%2Fb/volumes`, body: { name: 'v' }, status: 404 },
      {
        what: '%2F..%2F volumes',
        method: 'POST',
        path: `${P}/bt%2F..%2Fdp/volumes/custom`,
        body: { name: 'v' },
        status: 404,
      },
      { what: '65 characters GET', method: 'GET', path: `${P}/${LONG}`, status: 404 },
      { what: '65 characters DELETE', method: 'DELETE', path: `${P}/${LONG}`, status: 404 },
      { what: 'space in path', method: 'GET', path: `${P}/a%20b`, status: 404 },
      // Dot segments are resolved before routing: these name no pool route at all.
      { what: '%2e%2e DELETE', method: 'DELETE', path: `${P}/%2e%2e`, status: 404 },
      { what: '.. DELETE', method: 'DELETE', path: `${P}/..`, status: 404 },
      { what: 'pool/.. DELETE', method: 'DELETE', path: `${P}/bt/..`, status: 404 },
      { what: 'pool/%2e%2e PATCH', method: 'PATCH', path: `${P}/dp/%2e%2e`, body: { config: {} }, status: 404 },
    ];
    assert.deepEqual(await walk(cases), []);
    assert.deepEqual(await snapshot(), before0, 'nothing was half-written');
  });

  test('pool sources: `/`, inside the state directory, inside or around another pool, relative', async () => {
    const s = d.stateDir;
    const src = (name: string, driver: string, source: string, extra: Record<string, string> = {}) =>
      pool(name, driver, { source, ...extra });
    const cases: Case[] = [
      { what: 'root (dir)', method: 'POST', path: P, body: src('x', 'dir', '/'), status: 400, mentions: /root/ },
      { what: 'root (btrfs)', method: 'POST', path: P, body: src('x', 'btrfs', '/'), status: 400, mentions: /root/ },
      { what: 'root via ..', method: 'POST', path: P, body: src('x', 'dir', '/tmp/../'), status: 400 },
      {
        what: 'the state dir',
        method: 'POST',
        path: P,
        body: src('x', 'dir', s),
        status: 400,
        mentions: /state directory/,
      },
      {
        what: 'in the state dir',
        method: 'POST',
        path: P,
        body: src('x', 'dir', path.join(s, 'foo')),
        status: 400,
        mentions: /state directory/,
      },
      {
        what: 'in the state dir via ..',
        method: 'POST',
        path: P,
        body: src('x', 'dir', `${s}/../${path.basename(s)}/foo`),
        status: 400,
        mentions: /state directory/,
      },
      {
        what: "in another pool's directory",
        method: 'POST',
        path: P,
        body: src('x', 'dir', path.join(s, 'storage-pools', 'dp', 'custom')),
        status: 400,
      },
      {
        what: 'a loop file path in the state dir',
        method: 'POST',
        path: P,
        body: src('x', 'btrfs', path.join(s, 'disks', 'x.img')),
        status: 400,
        mentions: /state directory/,
      },
      {
        what: "bt's loop file",
        method: 'POST',
        path: P,
        body: src('x', 'btrfs', path.join(s, 'disks', 'bt.img')),
        status: 400,
      },
      {
        what: "inside ext's source",
        method: 'POST',
        path: P,
        body: src('x', 'dir', path.join(extDir, 'pool', 'sub')),
        status: 400,
        mentions: /"ext"/,
      },
      {
        what: "ext's source itself",
        method: 'POST',
        path: P,
        body: src('x', 'dir', path.join(extDir, 'pool')),
        status: 400,
        mentions: /"ext"/,
      },
      {
        what: "ext's source itself (btrfs)",
        method: 'POST',
        path: P,
        body: src('x', 'btrfs', path.join(extDir, 'pool')),
        status: 400,
        mentions: /"ext"/,
      },
      {
        what: "inside ext's source via ..",
        method: 'POST',
        path: P,
        body: src('x', 'dir', `${path.join(extDir, 'other')}/../pool/x`),
        status: 400,
        mentions: /"ext"/,
      },
      {
        what: "containing ext's source",
        method: 'POST',
        path: P,
        body: src('x', 'dir', extDir),
        status: 400,
        mentions: /"ext"/,
      },
      {
        what: 'containing the state dir (and every pool)',
        method: 'POST',
        path: P,
        body: src('x', 'dir', path.dirname(s)),
        status: 400,
        mentions: /contains svcd's state directory/,
      },
      {
        what: 'relative',
        method: 'POST',
        path: P,
        body: src('x', 'dir', 'relative/dir'),
        status: 400,
        mentions: /absolute/,
      },
      {
        what: 'relative (btrfs)',
        method: 'POST',
        path: P,
        body: src('x', 'btrfs', 'disk.img'),
        status: 400,
        mentions: /absolute/,
      },
      {
        what: 'volatile.initial_source',
        method: 'POST',
        path: P,
        body: pool('x', 'dir', { 'volatile.initial_source': '/srv' }),
        status: 400,
        mentions: /read-only/,
      },
    ];
    assert.deepEqual(await walk(cases), []);
    assert.deepEqual(await snapshot(), before0, 'nothing was half-written');
    assert.deepEqual(await hostProblems(), []);
  });

  test('pool sizes, drivers and config keys', async () => {
    const cases: Case[] = [
      { what: 'negative', method: 'POST', path: P, body: btrfs('x', { size: '-1GiB' }), status: 400, mentions: /size/ },
      { what: 'zero', method: 'POST', path: P, body: btrfs('x', { size: '0' }), status: 400, mentions: /size/ },
      { what: 'zero bytes', method: 'POST', path: P, body: btrfs('x', { size: '0B' }), status: 400, mentions: /size/ },
      { what: 'nonsense', method: 'POST', path: P, body: btrfs('x', { size: 'lots' }), status: 400, mentions: /size/ },
      {
        what: 'unknown unit',
        method: 'POST',
        path: P,
        body: btrfs('x', { size: '5XB' }),
        status: 400,
        mentions: /size/,
      },
      { what: 'empty', method: 'POST', path: P, body: btrfs('x', { size: '' }), status: 400, mentions: /size/ },
      {
        what: 'too small',
        method: 'POST',
        path: P,
        body: btrfs('x', { size: '1MiB' }),
        status: 400,
        mentions: /128MiB/,
      },
      {
        what: 'just too small',
        method: 'POST',
        path: P,
        body: btrfs('x', { size: '127MiB' }),
        status: 400,
        mentions: /128MiB/,
      },
      {
        what: 'beyond counting',
        method: 'POST',
        path: P,
        body: btrfs('x', { size: '1EiB' }),
        status: 400,
        mentions: /size/,
      },
      {
        what: 'beyond counting (bytes)',
        method: 'POST',
        path: P,
        body: btrfs('x', { size: '9007199254740993' }),
        status: 400,
        mentions: /size/,
      },
      {
        what: 'volume.size nonsense',
        method: 'POST',
        path: P,
        body: btrfs('x', { 'volume.size': 'lots' }),
        status: 400,
        mentions: /volume\.size/,
      },
      {
        what: 'volume.size beyond counting',
        method: 'POST',
        path: P,
        body: pool('x', 'dir', { 'volume.size': '8EiB' }),
        status: 400,
        mentions: /volume\.size/,
      },
      {
        what: 'size on a dir pool',
        method: 'POST',
        path: P,
        body: pool('x', 'dir', { size: '1GiB' }),
        status: 400,
        mentions: /dir/,
      },
      {
        what: 'unknown driver',
        method: 'POST',
        path: P,
        body: pool('x', 'nosuchdriver'),
        status: 400,
        mentions: /nosuchdriver/,
      },
      { what: 'driver in capitals', method: 'POST', path: P, body: pool('x', 'DIR'), status: 400, mentions: /DIR/ },
      { what: 'empty driver', method: 'POST', path: P, body: pool('x', ''), status: 400 },
      { what: 'missing driver', method: 'POST', path: P, body: { name: 'x' }, status: 400 },
      { what: 'lvm', method: 'POST', path: P, body: pool('x', 'lvm'), status: 400, mentions: /device-mapper/ },
      {
        what: 'lvm with its keys',
        method: 'POST',
        path: P,
        body: pool('x', 'lvm', { 'lvm.vg_name': 'vg0' }),
        status: 400,
        mentions: /device-mapper/,
      },
      {
        what: 'zfs',
        method: 'POST',
        path: P,
        body: pool('x', 'zfs'),
        status: 400,
        mentions: /missing zfs kernel module/,
      },
      {
        what: 'ceph',
        method: 'POST',
        path: P,
        body: pool('x', 'ceph'),
        status: 400,
        mentions: /missing rbd kernel module/,
      },
      {
        what: 'volume.bogus',
        method: 'POST',
        path: P,
        body: pool('x', 'dir', { 'volume.bogus': '1' }),
        status: 400,
        mentions: /volume\.bogus/,
      },
      {
        what: 'btrfs.nope on dir',
        method: 'POST',
        path: P,
        body: pool('x', 'dir', { 'btrfs.nope': '1' }),
        status: 400,
        mentions: /btrfs\.nope/,
      },
      {
        what: 'btrfs.mount_options on dir',
        method: 'POST',
        path: P,
        body: pool('x', 'dir', { 'btrfs.mount_options': 'noatime' }),
        status: 400,
        mentions: /btrfs\.mount_options/,
      },
      {
        what: 'lvm.vg_name on btrfs',
        method: 'POST',
        path: P,
        body: btrfs('x', { 'lvm.vg_name': 'vg0' }),
        status: 400,
        mentions: /lvm\.vg_name/,
      },
      {
        what: 'zfs.pool_name on btrfs',
        method: 'POST',
        path: P,
        body: btrfs('x', { 'zfs.pool_name': 'tank' }),
        status: 400,
        mentions: /zfs\.pool_name/,
      },
      { what: 'bare user. key', method: 'POST', path: P, body: pool('x', 'dir', { 'user.': 'x' }), status: 400 },
      {
        what: 'volatile key',
        method: 'POST',
        path: P,
        body: btrfs('x', { 'volatile.foo': '1' }),
        status: 400,
        mentions: /read-only/,
      },
      // The same on existing pools.
      {
        what: 'PATCH lvm.vg_name on btrfs',
        method: 'PATCH',
        path: `${P}/bt`,
        body: { config: { 'lvm.vg_name': 'vg0' } },
        status: 400,
        mentions: /lvm\.vg_name/,
      },
      {
        what: 'PATCH btrfs.nope on dir',
        method: 'PATCH',
        path: `${P}/dp`,
        body: { config: { 'btrfs.nope': '1' } },
        status: 400,
        mentions: /btrfs\.nope/,
      },
      {
        what: 'PATCH volume.bogus',
        method: 'PATCH',
        path: `${P}/ext`,
        body: { config: { 'volume.bogus': '1' } },
        status: 400,
        mentions: /volume\.bogus/,
      },
      {
        what: 'PATCH volatile',
        method: 'PATCH',
        path: `${P}/bt`,
        body: { config: { 'volatile.x': '1' } },
        status: 400,
        mentions: /read-only/,
      },
      { what: 'PATCH size on dir', method: 'PATCH', path: `${P}/dp`, body: { config: { size: '1GiB' } }, status: 400 },
      {
        what: 'PATCH volume.size nonsense',
        method: 'PATCH',
        path: `${P}/bt`,
        body: { config: { 'volume.size': '5XB' } },
        status: 400,
        mentions: /volume\.size/,
      },
      {
        what: 'PUT with an unknown key',
        method: 'PUT',
        path: `${P}/bt`,
        body: { config: { size: '256MiB', 'volume.bogus': '1' } },
        status: 400,
        mentions: /volume\.bogus/,
      },
      { what: 'PATCH a missing pool', method: 'PATCH', path: `${P}/nope`, body: { config: {} }, status: 404 },
      // Immutable: the source.
      {
        what: 'PUT a new source (btrfs)',
        method: 'PUT',
        path: `${P}/bt`,
        body: { config: { size: '256MiB', source: '/srv/other.img' } },
        status: 400,
        mentions: /source/,
      },
      {
        what: 'PUT a new source (dir)',
        method: 'PUT',
        path: `${P}/ext`,
        body: { config: { source: path.join(extDir, 'elsewhere') } },
        status: 400,
        mentions: /source/,
      },
      {
        what: 'PATCH a new source',
        method: 'PATCH',
        path: `${P}/dp`,
        body: { config: { source: '/srv/dp' } },
        status: 400,
        mentions: /source/,
      },
      // Shrinking.
      {
        what: 'PATCH shrink',
        method: 'PATCH',
        path: `${P}/bt`,
        body: { config: { size: '200MiB' } },
        status: 400,
        mentions: /shrink/,
      },
      {
        what: 'PUT shrink',
        method: 'PUT',
        path: `${P}/bt`,
        body: { config: { size: '128MiB' } },
        status: 400,
        mentions: /shrink/,
      },
      { what: 'PUT dropping the size', method: 'PUT', path: `${P}/bt`, body: { config: {} }, status: 400 },
      {
        what: 'PATCH size nonsense',
        method: 'PATCH',
        path: `${P}/bt`,
        body: { config: { size: 'lots' } },
        status: 400,
        mentions: /size/,
      },
      {
        what: 'PATCH size beyond counting',
        method: 'PATCH',
        path: `${P}/bt`,
        body: { config: { size: '1EiB' } },
        status: 400,
        mentions: /size/,
      },
      {
        what: 'PUT with a stale ETag',
        method: 'PUT',
        path: `${P}/dp`,
        body: { config: {} },
        headers: { 'If-Match': '"stale"' },
        status: 412,
      },
      // Deleting pools in use.
      { what: 'DELETE btrfs with a volume', method: 'DELETE', path: `${P}/bt`, status: 400, mentions: /in use/ },
      { what: 'DELETE dir with volumes', method: 'DELETE', path: `${P}/dp`, status: 400, mentions: /vol2/ },
      {
        what: 'DELETE dir (own source) with a volume',
        method: 'DELETE',
        path: `${P}/ext`,
        status: 400,
        mentions: /vol3/,
      },
      {
        what: 'DELETE default (used by a profile)',
        method: 'DELETE',
        path: `${P}/default`,
        status: 400,
        mentions: /profiles\/default/,
      },
      { what: 'DELETE a missing pool', method: 'DELETE', path: `${P}/nope`, status: 404 },
    ];
    assert.deepEqual(await walk(cases), []);
    assert.deepEqual(await snapshot(), before0, 'nothing was half-written');
    assert.deepEqual(await hostProblems(), []);
  });

  test('pools the host refuses: an error, and the half-made loop file, mount or row is gone', async (t) => {
    const cases: Case[] = [
      {
        what: 'bad mount options',
        method: 'POST',
        path: P,
        body: btrfs('mo', { 'btrfs.mount_options': 'no_such_option' }),
        status: 500,
        mentions: /mount/,
      },
      {
        what: 'source does not exist',
        method: 'POST',
        path: P,
        body: pool('ne', 'btrfs', { source: path.join(plainDir, 'missing') }),
        status: 500,
        mentions: /does not exist/,
      },
      {
        what: 'source is a regular file',
        method: 'POST',
        path: P,
        body: pool('rf', 'btrfs', { source: path.join(plainDir, 'file.img') }),
        status: 500,
        mentions: /neither a block device/,
      },
    ];
    if ((await statfs(plainDir)).type !== BTRFS_SUPER_MAGIC)
      cases.push({
        what: 'source on a non-btrfs filesystem',
        method: 'POST',
        path: P,
        body: pool('nb', 'btrfs', { source: plainDir }),
        status: 500,
        mentions: /not on a btrfs/,
      });
    if (stateFs === EXT4_SUPER_MAGIC) {
      // ext4 cannot hold a 100TiB file: the loop file cannot be made, or grown.
      cases.push({
        what: 'a loop file ext4 cannot hold',
        method: 'POST',
        path: P,
        body: btrfs('huge', { size: '100TiB' }),
        status: 500,
        mentions: /EFBIG|too large/,
      });
      cases.push({
        what: 'growing past what ext4 holds',
        method: 'PATCH',
        path: `${P}/bt`,
        body: { config: { size: '100TiB' } },
        status: 500,
        mentions: /EFBIG|too large/,
      });
    } else t.diagnostic(`the state directory is not on ext4 (${stateFs.toString(16)}): EFBIG cases skipped`);
    assert.deepEqual(await walk(cases), []);
    for (const name of ['mo', 'ne', 'rf', 'nb', 'huge'])
      assert.equal((await api.get(`${P}/${name}`)).status, 404, name);
    assert.deepEqual(await hostProblems(), []);
    // A refused update is rolled back: bt keeps its size and is usable (not stuck unavailable).
    assert.deepEqual(await snapshot(), before0, 'nothing was half-written');
  });

  test('volume names, paths and keys', async () => {
    const V = `${P}/dp/volumes`;
    const C = `${V}/custom`;
    const B = `${P}/bt/volumes/custom`;
    const cases: Case[] = [
      { what: 'slash', method: 'POST', path: V, body: { name: 'a/b' }, status: 400, mentions: /a\/b/ },
      { what: 'slash (typed path)', method: 'POST', path: C, body: { name: 'a/b' }, status: 400, mentions: /a\/b/ },
      {
        what: 'slash (btrfs)',
        method: 'POST',
        path: B,
        body: { name: 'a/b', config: { size: '10MiB' } },
        status: 400,
        mentions: /a\/b/,
      },
      { what: 'looks like a snapshot', method: 'POST', path: C, body: { name: 'vol2/snap' }, status: 400 },
      { what: 'dot-dot', method: 'POST', path: C, body: { name: '..' }, status: 400 },
      { what: 'dot-dot (btrfs)', method: 'POST', path: B, body: { name: '..' }, status: 400 },
      { what: 'dot', method: 'POST', path: C, body: { name: '.' }, status: 400 },
      { what: 'dot-dot path', method: 'POST', path: C, body: { name: '../../x' }, status: 400 },
      { what: 'space', method: 'POST', path: C, body: { name: 'a b' }, status: 400 },
      { what: 'empty', method: 'POST', path: C, body: { name: '' }, status: 400 },
      { what: 'missing', method: 'POST', path: C, body: {}, status: 400 },
      { what: '65 characters', method: 'POST', path: C, body: { name: LONG }, status: 400, mentions: /too long/ },
      {
        what: '65 characters (btrfs)',
        method: 'POST',
        path: B,
        body: { name: LONG },
        status: 400,
        mentions: /too long/,
      },
      { what: 'existing', method: 'POST', path: C, body: { name: 'vol2' }, status: 409 },
      { what: 'existing (64 characters)', method: 'POST', path: V, body: { name: LONGEST }, status: 409 },
      { what: 'type container', method: 'POST', path: V, body: { name: 'x', type: 'container' }, status: 400 },
      { what: 'type image (typed path)', method: 'POST', path: `${V}/image`, body: { name: 'x' }, status: 400 },
      { what: 'unknown type path', method: 'POST', path: `${V}/bogus`, body: { name: 'x' }, status: 404 },
      { what: 'block content', method: 'POST', path: C, body: { name: 'x', content_type: 'block' }, status: 400 },
      // Keys.
      {
        what: 'unknown key',
        method: 'POST',
        path: C,
        body: { name: 'x', config: { bogus: '1' } },
        status: 400,
        mentions: /bogus/,
      },
      {
        what: 'volatile key',
        method: 'POST',
        path: C,
        body: { name: 'x', config: { 'volatile.x': '1' } },
        status: 400,
        mentions: /read-only/,
      },
      {
        what: 'block.filesystem on btrfs',
        method: 'POST',
        path: B,
        body: { name: 'x', config: { 'block.filesystem': 'ext4' } },
        status: 400,
        mentions: /block\.filesystem/,
      },
      {
        what: 'size nonsense',
        method: 'POST',
        path: B,
        body: { name: 'x', config: { size: 'lots' } },
        status: 400,
        mentions: /size/,
      },
      {
        what: 'negative size',
        method: 'POST',
        path: B,
        body: { name: 'x', config: { size: '-5MiB' } },
        status: 400,
        mentions: /size/,
      },
      {
        what: 'size beyond counting',
        method: 'POST',
        path: B,
        body: { name: 'x', config: { size: '1EiB' } },
        status: 400,
        mentions: /size/,
      },
      {
        what: 'security.unmapped not a bool',
        method: 'POST',
        path: B,
        body: { name: 'x', config: { 'security.unmapped': 'maybe' } },
        status: 400,
      },
      {
        what: 'size on a dir pool',
        method: 'POST',
        path: C,
        body: { name: 'x', config: { size: '10MiB' } },
        status: 400,
        mentions: /project quota/,
      },
      {
        what: 'size on a dir pool (own source)',
        method: 'POST',
        path: `${P}/ext/volumes/custom`,
        body: { name: 'x', config: { size: '10MiB' } },
        status: 400,
        mentions: /project quota/,
      },
      {
        what: 'PATCH size on a dir pool',
        method: 'PATCH',
        path: `${C}/vol2`,
        body: { config: { size: '10MiB' } },
        status: 400,
        mentions: /project quota/,
      },
      {
        what: 'PATCH unknown key',
        method: 'PATCH',
        path: `${B}/vol1`,
        body: { config: { 'zfs.x': '1' } },
        status: 400,
        mentions: /zfs\.x/,
      },
      {
        what: 'PATCH size beyond counting',
        method: 'PATCH',
        path: `${B}/vol1`,
        body: { config: { size: '8EiB' } },
        status: 400,
        mentions: /size/,
      },
      {
        what: 'PUT with a stale ETag',
        method: 'PUT',
        path: `${C}/vol2`,
        body: { config: {} },
        headers: { 'If-Match': '"stale"' },
        status: 412,
      },
      // Missing pools and volumes.
      {
        what: 'on a missing pool',
        method: 'POST',
        path: `${P}/nope/volumes`,
        body: { name: 'x' },
        status: 404,
        mentions: /nope/,
      },
      {
        what: 'on a missing pool (typed)',
        method: 'POST',
        path: `${P}/nope/volumes/custom`,
        body: { name: 'x' },
        status: 404,
        mentions: /nope/,
      },
      { what: 'list on a missing pool', method: 'GET', path: `${P}/nope/volumes`, status: 404 },
      {
        what: 'copy of a missing volume',
        method: 'POST',
        path: C,
        body: { name: 'x', source: { type: 'copy', name: 'nope' } },
        status: 404,
      },
      {
        what: 'copy of a missing snapshot',
        method: 'POST',
        path: C,
        body: { name: 'x', source: { type: 'copy', name: 'vol2/nope' } },
        status: 404,
      },
      {
        what: 'copy from a missing pool',
        method: 'POST',
        path: C,
        body: { name: 'x', source: { type: 'copy', pool: 'nope', name: 'vol2' } },
        status: 404,
      },
      {
        what: 'copy without a name',
        method: 'POST',
        path: C,
        body: { name: 'x', source: { type: 'copy' } },
        status: 400,
      },
      {
        what: 'migration source',
        method: 'POST',
        path: C,
        body: { name: 'x', source: { type: 'migration', name: 'vol2' } },
        status: 400,
      },
      {
        what: 'copy onto an existing name',
        method: 'POST',
        path: C,
        body: { name: LONGEST, source: { type: 'copy', name: 'vol2' } },
        status: 409,
      },
      { what: 'restore a missing snapshot', method: 'PUT', path: `${B}/vol1`, body: { restore: 'nope' }, status: 404 },
      // Encoded slashes and dot segments in volume paths.
      { what: '%2F GET', method: 'GET', path: `${C}/a%2Fb`, status: 404 },
      { what: '%2F into snapshots', method: 'GET', path: `${B}/vol1%2Fsnapshots`, status: 404 },
      { what: '%2F DELETE of a snapshot path', method: 'DELETE', path: `${B}/vol1%2Fsnap1`, status: 404 },
      { what: '%2F DELETE', method: 'DELETE', path: `${C}/a%2Fb`, status: 404 },
      { what: '%2F..%2F DELETE', method: 'DELETE', path: `${C}/x%2F..%2Fvol2`, status: 404 },
      { what: 'snapshot %2F GET', method: 'GET', path: `${B}/vol1/snapshots/a%2Fb`, status: 404 },
      { what: 'snapshot ..%2F DELETE', method: 'DELETE', path: `${B}/vol1/snapshots/..%2Fsnap1`, status: 404 },
      { what: 'volume/.. DELETE', method: 'DELETE', path: `${C}/vol2/..`, status: 404 },
      { what: 'volume/%2e%2e DELETE', method: 'DELETE', path: `${C}/vol2/%2e%2e`, status: 404 },
      { what: '65 characters GET', method: 'GET', path: `${C}/${LONG}`, status: 404 },
      // Renames, moves and snapshots with bad names.
      { what: 'rename to a slash', method: 'POST', path: `${C}/vol2`, body: { name: 'a/b' }, status: 400 },
      { what: 'rename to ..', method: 'POST', path: `${C}/vol2`, body: { name: '..' }, status: 400 },
      {
        what: 'rename to 65 characters',
        method: 'POST',
        path: `${C}/vol2`,
        body: { name: LONG },
        status: 400,
        mentions: /too long/,
      },
      { what: 'rename onto an existing name', method: 'POST', path: `${C}/vol2`, body: { name: LONGEST }, status: 409 },
      {
        what: 'move to a missing pool',
        method: 'POST',
        path: `${C}/vol2`,
        body: { name: 'vol2', pool: 'nope' },
        status: 404,
      },
      {
        what: 'move onto an existing name',
        method: 'POST',
        path: `${C}/vol2`,
        body: { name: 'vol3', pool: 'ext' },
        status: 409,
      },
      {
        what: 'snapshot named with a slash',
        method: 'POST',
        path: `${B}/vol1/snapshots`,
        body: { name: 'a/b' },
        status: 400,
      },
      { what: 'snapshot named ..', method: 'POST', path: `${B}/vol1/snapshots`, body: { name: '..' }, status: 400 },
      {
        what: 'snapshot named 65 characters',
        method: 'POST',
        path: `${B}/vol1/snapshots`,
        body: { name: LONG },
        status: 400,
      },
      { what: 'existing snapshot', method: 'POST', path: `${B}/vol1/snapshots`, body: { name: 'snap1' }, status: 409 },
      {
        what: 'snapshot rename to a slash',
        method: 'POST',
        path: `${B}/vol1/snapshots/snap1`,
        body: { name: 'a/b' },
        status: 400,
      },
    ];
    assert.deepEqual(await walk(cases), []);
    assert.deepEqual(await snapshot(), before0, 'nothing was half-written');
    assert.deepEqual(await hostProblems(), []);
  });

  test('a volume used by a profile disk device cannot be deleted, renamed or moved', async () => {
    const B = `${P}/bt/volumes/custom`;
    const cases: Case[] = [
      { what: 'delete', method: 'DELETE', path: `${B}/vol1`, status: 400, mentions: /profiles\/uses/ },
      {
        what: 'rename',
        method: 'POST',
        path: `${B}/vol1`,
        body: { name: 'other' },
        status: 400,
        mentions: /profiles\/uses/,
      },
      { what: 'move', method: 'POST', path: `${B}/vol1`, body: { name: 'vol1', pool: 'dp' }, status: 400 },
    ];
    assert.deepEqual(await walk(cases), []);
    const vol = (await api.get(`${B}/vol1`)).json.metadata;
    assert.deepEqual(vol.used_by, ['/1.0/profiles/uses']);
    assert.deepEqual(await snapshot(), before0, 'nothing was half-written');
    assert.deepEqual(await hostProblems(), []);
  });

  for (const [kind, body] of [
    ['btrfs', btrfs('race-b')],
    ['dir', pool('race-d', 'dir')],
  ] as const) {
    test(`10 concurrent creates of one ${kind} pool: exactly one 200, the rest 409`, async () => {
      const replies = await Promise.all(Array.from({ length: 10 }, () => api.post(P, body)));
      const statuses = replies.map((r) => r.status).sort();
      assert.deepEqual(
        statuses,
        [200, 409, 409, 409, 409, 409, 409, 409, 409, 409],
        replies.map((r) => r.text).join('\n'),
      );
      const problems = replies
        .filter((r) => r.status === 409)
        .map((r) => envelopeProblem(r, { what: '', method: 'POST', path: P, status: 409, mentions: /already exists/ }))
        .filter(Boolean);
      assert.deepEqual(problems, []);
      const created = (await api.get(`${P}/${body.name}`)).json.metadata;
      assert.equal(created.status, 'Created');
      assert.equal(created.driver, kind);
      assert.deepEqual(await hostProblems(), [], 'exactly one pool made on the host');
      if (kind === 'btrfs')
        assert.equal((await mountsUnder(path.join(d.stateDir, 'storage-pools', body.name))).length, 1);

      // The same for a volume on it.
      const vols = await Promise.all(
        Array.from({ length: 10 }, () => api.post(`${P}/${body.name}/volumes/custom`, { name: 'same' })),
      );
      assert.deepEqual(
        vols.map((r) => r.status).sort(),
        [200, 409, 409, 409, 409, 409, 409, 409, 409, 409],
        vols.map((r) => r.text).join('\n'),
      );
      assert.deepEqual(await hostProblems(), [], 'exactly one volume made on the host');

      assert.equal((await api.delete(`${P}/${body.name}/volumes/custom/same`)).status, 200);
      assert.equal((await api.delete(`${P}/${body.name}`)).status, 200);
      assert.equal((await api.get(`${P}/${body.name}`)).status, 404);
      assert.deepEqual(await snapshot(), before0);
      assert.deepEqual(await hostProblems(), []);
    });
  }

  test('after all of it: the same pools, volumes and host state as before, and no internal error', async () => {
    assert.deepEqual(await snapshot(), before0);
    assert.deepEqual(await hostProblems(), []);
    // Still working: the fixtures can be used.
    const r = await api.get(`${P}/bt/resources`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.metadata.space.total > 200 * 1024 * 1024);
    const internal = d
      .output()
      .split('\n')
      .filter((l) => /"msg":"request failed"/.test(l));
    assert.deepEqual(internal, [], 'no request ended in an internal error');
  });
});
