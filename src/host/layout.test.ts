import assert from 'node:assert/strict';
import { test } from 'node:test';
import { poolSpecOf } from './layout.ts';

test('a source svcd chose is under each member’s own state directory; one the user gave is kept', () => {
  const chosen = { name: 'p', driver: 'dir', config: { source: '/var/lib/a/storage-pools/p' } };
  assert.equal(poolSpecOf(chosen, '/var/lib/b', 'n').config.source, '/var/lib/b/storage-pools/p');
  const loop = { name: 'f', driver: 'btrfs', config: { source: '/var/lib/a/disks/f.img', size: '1GiB' } };
  assert.deepEqual(poolSpecOf(loop, '/var/lib/b', 'n').config, { source: '/var/lib/b/disks/f.img', size: '1GiB' });
  const given = {
    name: 'p',
    driver: 'dir',
    config: { source: '/srv/storage-pools/p', 'volatile.initial_source': '/srv/storage-pools/p' },
  };
  assert.equal(poolSpecOf(given, '/var/lib/b', 'n').config.source, '/srv/storage-pools/p');
  const other = { name: 'p', driver: 'dir', config: { source: '/srv/elsewhere' } };
  assert.equal(poolSpecOf(other, '/var/lib/b', 'n').config.source, '/srv/elsewhere');
});
