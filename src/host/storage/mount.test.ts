import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blkidTypeArgs } from './blkid.ts';
import { mountArgs, umountArgs } from './mount.ts';

describe('mount and blkid argv', () => {
  it('builds mount/umount argv', () => {
    assert.deepEqual(
      mountArgs({ source: '/dev/loop0', target: '/m', fsType: 'btrfs', options: 'user_subvol_rm_allowed' }),
      ['-t', 'btrfs', '-o', 'user_subvol_rm_allowed', '/dev/loop0', '/m'],
    );
    assert.deepEqual(mountArgs({ source: '/srv/b', target: '/m', bind: true }), ['--bind', '/srv/b', '/m']);
    assert.deepEqual(mountArgs({ source: '/dev/sdb', target: '/m', fsType: 'btrfs', options: '' }), [
      '-t',
      'btrfs',
      '/dev/sdb',
      '/m',
    ]);
    assert.deepEqual(umountArgs('/m'), ['/m']);
    assert.deepEqual(umountArgs('/m', true), ['--lazy', '/m']);
    assert.deepEqual(blkidTypeArgs('/dev/sdb'), ['--probe', '--output', 'value', '--match-tag', 'TYPE', '/dev/sdb']);
  });
});
