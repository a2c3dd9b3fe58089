import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { useTempDatabase } from '../db/temp-database.ts';
import { insertImage } from '../desired/images.ts';
import { ensureDefaultProject } from '../desired/projects.ts';
import type { ImageRow } from '../desired/schema/index.ts';
import { writeServerConfig } from '../desired/server-config.ts';
import { createImageCacheObserver } from './image-cache-observer.ts';

const temp = useTempDatabase('image_cache', ensureDefaultProject);
const DAY = 86_400_000;
const image = (
  c: string,
  o: { cached: boolean; autoUpdate?: boolean; lastUsedAt?: Date | null; uploadedAt?: Date },
) => ({
  fingerprint: c.repeat(64),
  filename: '',
  size: 1,
  architecture: 'x86_64',
  split: false,
  public: false,
  autoUpdate: o.autoUpdate ?? false,
  cached: o.cached,
  properties: {},
  createdAt: new Date(0),
  expiresAt: null,
  lastUsedAt: o.lastUsedAt ?? null,
  ...(o.uploadedAt ? { uploadedAt: o.uploadedAt } : {}),
  updateSource: o.autoUpdate ? { server: 'https://127.0.0.1:1', protocol: 'svc', certificate: '', alias: 'bb' } : null,
});

test('cached images unused for remote_cache_expiry days go; auto_update images refresh every auto_update_interval hours', async () => {
  const { db } = temp.database;
  let now = Date.now();
  await insertImage(db, 'default', image('a', { cached: true, lastUsedAt: new Date(now - 11 * DAY) }));
  await insertImage(db, 'default', image('b', { cached: true, lastUsedAt: new Date(now - 9 * DAY) }));
  await insertImage(db, 'default', image('c', { cached: false, uploadedAt: new Date(now - 30 * DAY) }));
  await insertImage(db, 'default', image('d', { cached: true, uploadedAt: new Date(now - 12 * DAY) }));
  await insertImage(db, 'default', image('e', { cached: false, autoUpdate: true }));
  await insertImage(db, 'default', image('f', { cached: true, autoUpdate: true, lastUsedAt: new Date(now) }));
  const removed: string[] = [];
  const refreshed: string[] = [];
  const obs = createImageCacheObserver({
    db,
    node: 'n1',
    log: pino({ level: 'silent' }),
    now: () => now,
    images: {
      remove: async (_p, fp) => void removed.push(fp[0]!),
      refresh: async (_p, img: ImageRow) => (refreshed.push(img.fingerprint[0]!), { refreshed: false }),
    },
  });
  const signal = new AbortController().signal;
  await obs.sample(signal);
  assert.deepEqual(removed.sort(), ['a', 'd'], 'defaults: 10 days; last_used_at, else uploaded_at');
  assert.deepEqual(refreshed, [], 'not before 6 hours');
  now += 6 * 3_600_000;
  await obs.sample(signal);
  assert.deepEqual(refreshed.sort(), ['e', 'f']);
  await writeServerConfig(db, 'n1', {
    'images.auto_update_cached': 'false',
    'images.auto_update_interval': '0.5',
    'images.remote_cache_expiry': '0',
  });
  refreshed.length = 0;
  removed.length = 0;
  now += 100 * DAY;
  await obs.sample(signal);
  assert.deepEqual(removed, [], '0 days: never expire');
  assert.deepEqual(refreshed, ['e'], 'cached images are left alone without auto_update_cached');
  await writeServerConfig(db, 'n1', { 'images.auto_update_interval': '0', 'images.remote_cache_expiry': '0.5' });
  refreshed.length = 0;
  now += 100 * DAY;
  await obs.sample(signal);
  assert.deepEqual(refreshed, [], '0 hours: never refresh');
  assert.deepEqual(removed.sort(), ['a', 'b', 'd', 'f'], 'a fraction of a day (the fake remove keeps the rows)');
});
