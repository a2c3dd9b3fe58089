import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OWN_SUBDIRS, POOL_SUBDIRS, snapshotPathIn, volumePathIn } from './pool-layout.ts';
import { loopFilePath } from '../layout.ts';

describe('pool layout', () => {
  it('puts volumes and snapshots under per-type directories', () => {
    assert.equal(volumePathIn('/p', { id: 'v1', type: 'custom' }), '/p/custom/v1');
    assert.equal(volumePathIn('/p', { id: 'v1', type: 'container' }), '/p/containers/v1');
    assert.equal(snapshotPathIn('/p', { volume: { id: 'v1', type: 'custom' }, id: 's1' }), '/p/custom-snapshots/v1/s1');
    assert.equal(snapshotPathIn('/p', { volume: { id: 'v1', type: 'image' }, id: 's1' }), '/p/images-snapshots/v1/s1');
    assert.equal(loopFilePath('/var/lib/svcd', 'pool1'), '/var/lib/svcd/disks/pool1.img');
    assert.deepEqual([...POOL_SUBDIRS], ['custom', 'custom-snapshots', 'containers', 'images']);
    assert.ok(OWN_SUBDIRS.includes('containers-snapshots'));
  });

  it('refuses ids that could escape the pool', () => {
    for (const bad of ['', '..', '../x', 'a/b', '.hidden', 'a..b'])
      assert.throws(() => volumePathIn('/p', { id: bad, type: 'custom' }), RangeError, bad);
  });
});
