import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  linkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { stringify } from 'yaml';
import { describeBackup } from './backup-config.ts';
import { backupTarArgs, packBackup, unpackBackup, unpackTarArgs } from './backup-tarball.ts';
import { InvalidBackupError } from './errors.ts';
import { memberComponents, scanBackup } from './scan-backup.ts';

const work = mkdtempSync(path.join(os.tmpdir(), 'svcd-scan-backup-'));
after(() => rmSync(work, { recursive: true, force: true }));

type Member = { path: string; type?: 'File' | 'Directory' | 'SymbolicLink' | 'Link'; body?: string; linkpath?: string };

/** A tarball written header by header, so that it can hold what GNU tar would refuse to create. */
function tarball(name: string, members: Member[], gzip = false): string {
  const blocks: Buffer[] = [];
  for (const m of members) {
    const body = Buffer.from(m.body ?? '');
    const type = m.type ?? (m.body !== undefined ? 'File' : 'Directory');
    const h = new Header({
      path: m.path,
      type,
      size: type === 'File' ? body.length : 0,
      mode: type === 'Directory' ? 0o755 : 0o644,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
      ...(m.linkpath ? { linkpath: m.linkpath } : {}),
    });
    const block = Buffer.alloc(512);
    h.encode(block, 0);
    blocks.push(block);
    if (type === 'File' && body.length) blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  const file = path.join(work, name);
  writeFileSync(file, gzip ? gzipSync(Buffer.concat(blocks)) : Buffer.concat(blocks));
  return file;
}

const config = (snapshots: { name: string; created_at: string; config?: Record<string, string> }[] = []) => ({
  container: { name: 'c1', architecture: 'x86_64', profiles: ['default'], config: { 'user.a': 'b' }, devices: {} },
  snapshots: snapshots.map((s) => ({ config: {}, ...s })),
});
const index = (snapshots: string[], extra: Record<string, unknown> = {}) =>
  stringify({
    name: 'c1',
    backend: 'dir',
    pool: 'p',
    snapshots,
    optimized: false,
    type: 'container',
    config: config(snapshots.map((n, i) => ({ name: n, created_at: `2024-01-0${i + 1}T00:00:00Z` }))),
    ...extra,
  });
const good = (snapshots: string[] = []): Member[] => [
  { path: 'backup/' },
  { path: 'backup/index.yaml', body: index(snapshots) },
  { path: 'backup/container/' },
  { path: 'backup/container/rootfs/' },
  { path: 'backup/container/rootfs/etc/' },
  { path: 'backup/container/rootfs/etc/hostname', body: 'c1\n' },
  { path: 'backup/container/rootfs/bin/sh', type: 'SymbolicLink', linkpath: '/bin/busybox' },
  { path: 'backup/container/metadata.yaml', body: 'architecture: x86_64\n' },
  ...snapshots.flatMap((n) => [
    { path: `backup/snapshots/${n}/rootfs/` },
    { path: `backup/snapshots/${n}/rootfs/f`, body: n },
  ]),
];

const refused = async (file: string, why: RegExp) =>
  assert.rejects(scanBackup(file), (e: Error) => e instanceof InvalidBackupError && why.test(e.message));

test('member names: relative, no "." or ".." components', () => {
  assert.deepEqual(memberComponents('backup/container/rootfs/'), ['backup', 'container', 'rootfs']);
  for (const bad of ['/etc/passwd', 'backup/../x', 'backup/./x', 'backup//x', '', '../backup'])
    assert.throws(() => memberComponents(bad), InvalidBackupError, bad);
});

test('a well-formed tarball (plain or gzip): index, config, snapshots oldest first', async () => {
  const s = await scanBackup(tarball('good.tar.gz', good(['s2', 's1']), true));
  assert.equal(s.index.name, 'c1');
  assert.deepEqual(s.index.snapshots, ['s2', 's1']);
  assert.deepEqual(s.config.container.config, { 'user.a': 'b' });
  // s2 was made on the 1st, s1 on the 2nd (by the index order above): oldest first.
  assert.deepEqual(
    s.snapshots.map((x) => x.name),
    ['s2', 's1'],
  );
  assert.equal((await scanBackup(tarball('plain.tar', good()))).snapshots.length, 0);
});

test('config from backup/container/backup.yaml when index.yaml has none (older LXD)', async () => {
  const s = await scanBackup(
    tarball('old.tar', [
      {
        path: 'backup/index.yaml',
        body: stringify({ name: 'c1', backend: 'dir', pool: 'p', snapshots: ['snap0'], type: 'container' }),
      },
      { path: 'backup/container/rootfs/' },
      {
        path: 'backup/container/backup.yaml',
        body: stringify(config([{ name: 'c1/snap0', created_at: '2023-02-03T04:05:06Z', config: { 'user.x': 'y' } }])),
      },
      { path: 'backup/snapshots/snap0/rootfs/' },
    ]),
  );
  assert.deepEqual(
    s.snapshots.map((x) => [x.name, x.created_at, x.config]),
    [['snap0', '2023-02-03T04:05:06.000Z', { 'user.x': 'y' }]],
  );
});

test('path tricks are refused: escapes, absolute names, writes through a symlink (either order), links out of their part', async () => {
  await refused(
    tarball('dotdot.tar', [...good(), { path: 'backup/container/rootfs/../../../../etc/x', body: 'x' }]),
    /"\.\." component/,
  );
  await refused(tarball('abs.tar', [...good(), { path: '/etc/x', body: 'x' }]), /not a relative path/);
  await refused(tarball('outside.tar', [...good(), { path: 'etc/x', body: 'x' }]), /outside backup\//);
  await refused(
    tarball('through-link.tar', [
      ...good(),
      { path: 'backup/container/rootfs/evil', type: 'SymbolicLink', linkpath: '/etc' },
      { path: 'backup/container/rootfs/evil/passwd', body: 'x' },
    ]),
    /below "backup\/container\/rootfs\/evil", which is not a directory/,
  );
  await refused(
    tarball('through-link-late.tar', [
      ...good(),
      { path: 'backup/container/rootfs/evil/passwd', body: 'x' },
      { path: 'backup/container/rootfs/evil', type: 'SymbolicLink', linkpath: '/etc' },
    ]),
    /(not a directory|different types)/,
  );
  await refused(
    tarball('rootfs-link.tar', [
      { path: 'backup/index.yaml', body: index([]) },
      { path: 'backup/container/rootfs', type: 'SymbolicLink', linkpath: '/' },
    ]),
    /rootfs" must be a directory/,
  );
  await refused(
    tarball('hardlink-out.tar', [
      ...good(['s1']),
      { path: 'backup/container/rootfs/h', type: 'Link', linkpath: 'backup/snapshots/s1/rootfs/f' },
    ]),
    /hard link .* points outside/,
  );
  await refused(
    tarball('hardlink-abs.tar', [
      ...good(),
      { path: 'backup/container/rootfs/h', type: 'Link', linkpath: '/etc/shadow' },
    ]),
    /not a relative path/,
  );
  await refused(
    tarball('meta-link.tar', [
      ...good(),
      { path: 'backup/container/metadata.yaml', type: 'SymbolicLink', linkpath: '/etc/shadow' },
    ]),
    /(different types|must be a regular file)/,
  );
  await refused(
    tarball('extra-top.tar', [...good(), { path: 'backup/container/hooks/x', body: 'x' }]),
    /unexpected member/,
  );
  await refused(
    tarball('optimized.tar', [...good(), { path: 'backup/container.bin', body: 'x' }]),
    /unexpected member .*optimized/,
  );
});

test('broken or inconsistent backups are refused with the reason', async () => {
  const garbage = path.join(work, 'garbage');
  writeFileSync(garbage, 'not a tarball at all'.repeat(40));
  await refused(garbage, /not a \(compressed\) tarball/);
  const whole = readFileSync(tarball('whole.tar.gz', good(['s1']), true));
  const cut = path.join(work, 'cut.tar.gz');
  writeFileSync(cut, whole.subarray(0, whole.length - 20));
  await refused(cut, /corrupt or truncated/);
  await refused(
    tarball(
      'noindex.tar',
      good().filter((m) => m.path !== 'backup/index.yaml'),
    ),
    /index\.yaml is missing/,
  );
  await refused(
    tarball(
      'norootfs.tar',
      good().filter((m) => !m.path.startsWith('backup/container/rootfs')),
    ),
    /backup\/container\/rootfs is missing/,
  );
  await refused(
    tarball('unlisted.tar', [...good(), { path: 'backup/snapshots/s9/rootfs/' }]),
    /backup\/snapshots\/s9 is not listed/,
  );
  await refused(
    tarball('missing-snap.tar', [...good(['s1']).filter((m) => !m.path.startsWith('backup/snapshots/'))]),
    /snapshot "s1" is listed .*s1\/rootfs is missing/,
  );
  await refused(tarball('bad-snap-name.tar', [...good(), { path: 'backup/snapshots/a:b/rootfs/' }]), /not allowed/);
  const undescribed = good(['s1']).map((m) =>
    m.path === 'backup/index.yaml' ? { ...m, body: stringify({ name: 'c1', snapshots: ['s1'], config: config() }) } : m,
  );
  await refused(
    tarball('undescribed.tar', undescribed),
    /snapshot "s1" is listed in backup\/index.yaml but not described/,
  );
  const opt = good().map((m) => (m.path === 'backup/index.yaml' ? { ...m, body: index([], { optimized: true }) } : m));
  await refused(tarball('opt.tar', opt), /optimized/);
  const vm = good().map((m) =>
    m.path === 'backup/index.yaml' ? { ...m, body: index([], { type: 'virtual-machine' }) } : m,
  );
  await refused(tarball('vm.tar', vm), /containers only/);
});

test('backupTarArgs: snapshot parts under backup/snapshots/<name>/, symlink targets never rewritten', () => {
  const args = backupTarArgs({
    output: '/o.tar',
    indexDir: '/tmp/i',
    volumePath: '/pool/containers/v1',
    members: ['metadata.yaml', 'rootfs'],
    compression: 'gzip',
    snapshots: [
      { name: 's1', path: '/pool/containers-snapshots/v1/aaaa-1', present: ['rootfs', 'metadata.yaml', 'junk'] },
    ],
  });
  assert.ok(args.includes('s,^aaaa-1/,backup/snapshots/s1/,rhS'));
  assert.ok(args.every((a) => !a.startsWith('s,') || a.endsWith(',rhS')));
  assert.deepEqual(args.slice(-3), [
    '--directory=/pool/containers-snapshots/v1',
    'aaaa-1/metadata.yaml',
    'aaaa-1/rootfs',
  ]);
  assert.throws(
    () =>
      backupTarArgs({
        output: '/o',
        indexDir: '/i',
        volumePath: '/v',
        members: [],
        compression: 'none',
        snapshots: [{ name: 'a,b', path: '/s/x', present: [] }],
      }),
    RangeError,
  );
  assert.deepEqual(unpackTarArgs('/f.tar', '/t', { snapshot: 's1' }, 'none').slice(-4), [
    '--strip-components=3',
    '--no-wildcards',
    '--',
    'backup/snapshots/s1',
  ]);
  assert.throws(() => unpackTarArgs('/f.tar', '/t', { snapshot: '../x' }, 'none'), RangeError);
});

test('pack, scan and unpack round trip with GNU tar: container and snapshots, links kept', async () => {
  const vol = path.join(work, 'pool/containers/v1');
  const snapDir = path.join(work, 'pool/containers-snapshots/v1');
  const mk = (dir: string, content: string) => {
    mkdirSync(path.join(dir, 'rootfs/etc'), { recursive: true });
    mkdirSync(path.join(dir, 'templates'), { recursive: true });
    writeFileSync(path.join(dir, 'metadata.yaml'), 'architecture: x86_64\n');
    writeFileSync(path.join(dir, 'rootfs/etc/data'), content);
    linkSync(path.join(dir, 'rootfs/etc/data'), path.join(dir, 'rootfs/etc/data-link'));
    symlinkSync('rootfs/etc/data', path.join(dir, 'rootfs/rel'));
  };
  mk(vol, 'now');
  mk(path.join(snapDir, 'id-1'), 'one');
  mk(path.join(snapDir, 'id-2'), 'two');
  const at = (d: string) => new Date(d);
  const facts = (name: string, createdAt: Date) => ({
    name,
    architecture: 'x86_64',
    ephemeral: false,
    profiles: ['default'],
    config: { 'user.n': name },
    devices: {},
    createdAt,
    expanded: { config: {}, devices: {} },
  });
  const cfg = describeBackup({
    project: 'default',
    container: { ...facts('c1', at('2024-01-01T00:00:00Z')), lastUsedAt: null },
    snapshots: [facts('s1', at('2024-01-02T00:00:00Z')), facts('s2', at('2024-01-03T00:00:00Z'))],
    pool: { name: 'p', driver: 'dir', description: '', config: {} },
  });
  const out = path.join(work, 'packed.tar.gz');
  await packBackup({
    output: out,
    volumePath: vol,
    present: ['metadata.yaml', 'rootfs', 'templates'],
    index: {
      name: 'c1',
      backend: 'dir',
      pool: 'p',
      snapshots: ['s1', 's2'],
      optimized: false,
      optimized_header: false,
      type: 'container',
      config: cfg,
    },
    config: cfg,
    snapshots: [
      { name: 's1', path: path.join(snapDir, 'id-1'), present: ['metadata.yaml', 'rootfs', 'templates'] },
      { name: 's2', path: path.join(snapDir, 'id-2'), present: ['metadata.yaml', 'rootfs', 'templates'] },
    ],
    compression: 'gzip',
  });
  const listing = execFileSync('tar', ['-tzf', out], { encoding: 'utf8' }).split('\n');
  for (const m of [
    'backup/index.yaml',
    'backup/container/backup.yaml',
    'backup/container/rootfs/etc/data',
    'backup/snapshots/s1/rootfs/etc/data',
    'backup/snapshots/s2/metadata.yaml',
    'backup/snapshots/s2/templates/',
  ])
    assert.ok(listing.includes(m), `${m} in ${listing.join(' ')}`);
  const scanned = await scanBackup(out);
  assert.deepEqual(
    scanned.snapshots.map((s) => [s.name, s.config['user.n']]),
    [
      ['s1', 's1'],
      ['s2', 's2'],
    ],
  );
  for (const [part, want] of [
    [{}, 'now'],
    [{ snapshot: 's1' }, 'one'],
    [{ snapshot: 's2' }, 'two'],
  ] as const) {
    const target = path.join(work, `unpacked-${'snapshot' in part ? part.snapshot : 'container'}`);
    mkdirSync(target);
    await unpackBackup(out, target, undefined, part);
    assert.equal(readFileSync(path.join(target, 'rootfs/etc/data'), 'utf8'), want);
    assert.equal(
      lstatSync(path.join(target, 'rootfs/etc/data-link')).ino,
      lstatSync(path.join(target, 'rootfs/etc/data')).ino,
      'hard link kept',
    );
    assert.equal(readlinkSync(path.join(target, 'rootfs/rel')), 'rootfs/etc/data', 'symlink target not rewritten');
    assert.ok(lstatSync(path.join(target, 'metadata.yaml')).isFile());
  }
});
