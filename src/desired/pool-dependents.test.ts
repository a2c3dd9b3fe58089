import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { useTempDatabase } from '../db/temp-database.ts';
import { insertContainer } from './containers.ts';
import { poolDependents } from './pool-dependents.ts';
import { createProfile } from './profiles.ts';
import { ensureDefaultProject } from './projects.ts';
import { storagePools, storageVolumes } from './schema/index.ts';

const temp = useTempDatabase('svcd-pool-dependents-', ensureDefaultProject);

test('a pool maps to the containers on it (root volume, own disk, a profile disk) and to its custom and image volumes', async () => {
  const { db } = temp.database;
  await db.insert(storagePools).values([
    { name: 'fast', driver: 'dir', config: {} },
    { name: 'slow', driver: 'dir', config: {} },
  ]);
  const disk = (pool: string, extra: Record<string, string> = {}) => ({ type: 'disk', pool, ...extra });
  await createProfile(db, 'default', 'on-fast', {
    description: '',
    config: {},
    devices: { root: disk('fast', { path: '/' }) },
  });
  await createProfile(db, 'default', 'on-slow', {
    description: '',
    config: {},
    devices: { root: disk('slow', { path: '/' }) },
  });
  const input = (profiles: string[], devices: Record<string, Record<string, string>> = {}) => ({
    description: '',
    architecture: 'x86_64',
    ephemeral: false,
    profiles,
    config: {},
    devices,
  });
  const mk = async (name: string, profiles: string[], devices?: Record<string, Record<string, string>>) =>
    (await insertContainer(db, 'default', name, input(profiles, devices), { type: 'none' }, 'stopped'))!.id;
  const byProfile = await mk('by-profile', ['on-fast']);
  const ownDisk = await mk('own-disk', ['on-slow'], { data: disk('fast', { source: 'vol1', path: '/data' }) });
  const byRootVolume = await mk('by-root-volume', []);
  const elsewhere = await mk('elsewhere', ['on-slow']);
  const custom = randomUUID();
  const image = randomUUID();
  await db.insert(storageVolumes).values([
    { id: byRootVolume, pool: 'fast', project: 'default', type: 'container', name: 'by-root-volume', config: {} },
    { id: custom, pool: 'fast', project: 'default', type: 'custom', name: 'vol1', config: {} },
    { id: image, pool: 'fast', project: 'default', type: 'image', name: 'f'.repeat(64), config: {} },
    { id: randomUUID(), pool: 'slow', project: 'default', type: 'custom', name: 'vol2', config: {} },
  ]);

  const fast = await poolDependents(db, 'fast');
  assert.deepEqual(new Set(fast.containers), new Set([byProfile, ownDisk, byRootVolume]));
  assert.deepEqual(fast.customVolumes, [custom]);
  assert.deepEqual(fast.imageVolumes, [image]);
  const slow = await poolDependents(db, 'slow');
  assert.deepEqual(new Set(slow.containers), new Set([ownDisk, elsewhere]));
  assert.equal(slow.customVolumes.length, 1);
  assert.deepEqual(await poolDependents(db, 'none'), { containers: [], customVolumes: [], imageVolumes: [] });
});
