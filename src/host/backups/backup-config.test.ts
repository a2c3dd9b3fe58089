import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import {
  describeBackup,
  parseBackupConfig,
  parseBackupIndex,
  renderBackupConfig,
  renderBackupIndex,
} from './backup-config.ts';
import { InvalidBackupError } from './errors.ts';

const created = new Date('2024-05-01T10:00:00Z');
const snap = (name: string, at: string, config: Record<string, string>) => ({
  name,
  architecture: 'x86_64',
  ephemeral: false,
  profiles: ['default'],
  config,
  devices: {},
  createdAt: new Date(at),
  expanded: { config, devices: { root: { type: 'disk', path: '/', pool: 'p1' } } },
});
const described = describeBackup({
  project: 'default',
  container: {
    name: 'c1',
    description: 'web',
    architecture: 'x86_64',
    ephemeral: false,
    profiles: ['default'],
    config: { 'user.note': 'kept' },
    devices: {},
    createdAt: created,
    lastUsedAt: null,
    expanded: { config: { 'user.note': 'kept' }, devices: { root: { type: 'disk', path: '/', pool: 'p1' } } },
  },
  snapshots: [snap('s1', '2024-05-02T10:00:00Z', { 'user.snap': 'one' }), snap('s2', '2024-05-03T10:00:00Z', {})],
  pool: { name: 'p1', driver: 'dir', description: '', config: { source: '/x' } },
});

test('index.yaml: LXD keys (name, backend, pool, snapshots, optimized, optimized_header, type, config) and a round trip', () => {
  const text = renderBackupIndex({
    name: 'c1',
    backend: 'dir',
    pool: 'p1',
    snapshots: ['s1', 's2'],
    optimized: false,
    optimized_header: false,
    type: 'container',
    config: described,
  });
  const raw = parse(text);
  assert.deepEqual(Object.keys(raw), [
    'name',
    'backend',
    'pool',
    'snapshots',
    'optimized',
    'optimized_header',
    'type',
    'config',
  ]);
  assert.deepEqual(raw.snapshots, ['s1', 's2']);
  assert.deepEqual(Object.keys(raw.config), ['container', 'snapshots', 'pool', 'volume']);
  const back = parseBackupIndex(text);
  assert.deepEqual(back.snapshots, ['s1', 's2']);
  assert.equal(back.config?.container.name, 'c1');
  assert.equal(back.config?.container.description, 'web');
  assert.deepEqual(back.config?.container.config, { 'user.note': 'kept' });
  assert.deepEqual(
    back.config?.snapshots.map((s) => [s.name, s.created_at, s.config]),
    [
      ['s1', '2024-05-02T10:00:00.000Z', { 'user.snap': 'one' }],
      ['s2', '2024-05-03T10:00:00.000Z', {}],
    ],
  );
  // container_only: no snapshots key at all (LXD omits it).
  assert.equal(
    parse(
      renderBackupIndex({
        name: 'c1',
        backend: 'dir',
        pool: 'p1',
        snapshots: [],
        optimized: false,
        optimized_header: false,
        type: 'container',
      }),
    ).snapshots,
    undefined,
  );
});

test('backup.yaml: container, snapshots (config, devices, profiles, created_at, expires_at, stateful), pool and volume', () => {
  const raw = parse(renderBackupConfig(described));
  assert.equal(raw.container.name, 'c1');
  assert.equal(raw.container.created_at, created.toISOString());
  assert.deepEqual(raw.container.expanded_devices.root, { type: 'disk', path: '/', pool: 'p1' });
  assert.equal(raw.snapshots.length, 2);
  assert.deepEqual(raw.snapshots[0], {
    name: 's1',
    architecture: 'x86_64',
    ephemeral: false,
    stateful: false,
    profiles: ['default'],
    config: { 'user.snap': 'one' },
    devices: {},
    expanded_config: { 'user.snap': 'one' },
    expanded_devices: { root: { type: 'disk', path: '/', pool: 'p1' } },
    created_at: '2024-05-02T10:00:00.000Z',
    last_used_at: '1970-01-01T00:00:00Z',
    expires_at: '1970-01-01T00:00:00Z',
  });
  assert.equal(raw.pool.name, 'p1');
  assert.equal(raw.pool.driver, 'dir');
  assert.equal(raw.volume.type, 'container');
  assert.equal(raw.volume.name, 'c1');
});

test("LXD 5.0's files parse: unquoted timestamps, old '<container>/<snapshot>' names, missing optional keys", () => {
  const lxdIndex = [
    'name: web',
    'backend: btrfs',
    'pool: default',
    'snapshots:',
    '- snap0',
    'optimized: false',
    'optimized_header: false',
    'type: container',
  ].join('\n');
  const i = parseBackupIndex(lxdIndex);
  assert.deepEqual(
    [i.name, i.backend, i.pool, i.snapshots, i.optimized, i.type, i.config],
    ['web', 'btrfs', 'default', ['snap0'], false, 'container', undefined],
  );
  const lxdBackupYaml = [
    'container:',
    '  architecture: x86_64',
    '  config:',
    '    image.os: Debian',
    '    limits.cpu: 2',
    '    volatile.base_image: abc',
    '  devices: {}',
    '  ephemeral: false',
    '  profiles:',
    '  - default',
    '  stateful: false',
    '  description: ""',
    '  created_at: 2024-01-02T03:04:05.123456789Z',
    '  name: web',
    'snapshots:',
    '- architecture: x86_64',
    '  config:',
    '    user.a: b',
    '  created_at: 2024-01-03T00:00:00Z',
    '  devices: {}',
    '  ephemeral: false',
    '  expires_at: 0001-01-01T00:00:00Z',
    '  name: web/snap0',
    '  profiles: [default]',
    '  stateful: false',
    'pool:',
    '  name: default',
    '  driver: btrfs',
    'volume:',
    '  name: web',
  ].join('\n');
  const cfg = parseBackupConfig(lxdBackupYaml);
  assert.equal(cfg.container.config['limits.cpu'], '2');
  assert.equal(cfg.snapshots[0]!.name, 'snap0');
  assert.equal(cfg.snapshots[0]!.created_at, '2024-01-03T00:00:00.000Z');
  assert.deepEqual(cfg.snapshots[0]!.config, { 'user.a': 'b' });
  assert.equal(cfg.pool?.driver, 'btrfs');
});

test('bad index.yaml or backup.yaml: a 400-class error naming the problem', () => {
  assert.throws(
    () => parseBackupIndex('{'),
    (e: Error) => e instanceof InvalidBackupError && /not valid YAML/.test(e.message),
  );
  assert.throws(() => parseBackupIndex('backend: dir'), /has no name/);
  assert.throws(() => parseBackupIndex('name: x\nsnapshots: [a, a]'), /lists a snapshot twice/);
  assert.throws(() => parseBackupIndex('name: x\nsnapshots: 3'), /list of names/);
  assert.throws(() => parseBackupConfig('container: 3'), /has no container/);
  assert.throws(
    () => parseBackupConfig('container: {name: x, config: {a: {b: c}}}'),
    /container.config.a must be a string/,
  );
  assert.throws(
    () => parseBackupConfig('container: {name: x}\nsnapshots: [{config: {}}]'),
    /every snapshot needs a name/,
  );
});
