import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { btrfsArgs, parseQgroupLimit } from './btrfs-args.ts';

describe('btrfsArgs', () => {
  it('builds argv arrays', () => {
    assert.deepEqual(btrfsArgs.mkfs('p1', '/s/disks/p1.img'), ['-L', 'p1', '/s/disks/p1.img']);
    assert.deepEqual(btrfsArgs.snapshot('/a', '/b', true), ['subvolume', 'snapshot', '-r', '/a', '/b']);
    assert.deepEqual(btrfsArgs.snapshot('/a', '/b', false), ['subvolume', 'snapshot', '/a', '/b']);
    assert.deepEqual(btrfsArgs.qgroupLimit(52428800, '/v'), ['qgroup', 'limit', '52428800', '/v']);
    assert.deepEqual(btrfsArgs.qgroupLimit(undefined, '/v'), ['qgroup', 'limit', 'none', '/v']);
    assert.deepEqual(btrfsArgs.resizeMax('/m'), ['filesystem', 'resize', 'max', '/m']);
    assert.deepEqual(btrfsArgs.quotaEnable('/m'), ['quota', 'enable', '/m']);
    assert.deepEqual(btrfsArgs.setReadOnly('/s'), ['property', 'set', '-ts', '/s', 'ro', 'true']);
    assert.deepEqual(btrfsArgs.send('/s2'), ['send', '/s2']);
    assert.deepEqual(btrfsArgs.send('/s2', '/s1'), ['send', '-p', '/s1', '/s2']);
    assert.deepEqual(btrfsArgs.receive('/in'), ['receive', '-e', '/in']);
  });
});

describe('parseQgroupLimit', () => {
  it('reads the limit of the first level-0 qgroup (btrfs-progs 6.x with a Path column)', () => {
    const out = [
      'Qgroupid    Referenced    Exclusive  Max referenced   Path ',
      '--------    ----------    ---------  --------------   ---- ',
      '0/256                0            0        52428800   v',
    ].join('\n');
    assert.equal(parseQgroupLimit(out), 52428800);
  });

  it('reads older output without a Path column, and none', () => {
    const out = [
      'qgroupid         rfer         excl     max_rfer ',
      '--------         ----         ----     -------- ',
      '0/257        16384        16384         none ',
    ].join('\n');
    assert.equal(parseQgroupLimit(out), undefined);
  });

  it('returns null when there is no level-0 row', () => {
    assert.equal(parseQgroupLimit(''), null);
    assert.equal(parseQgroupLimit('1/100 0 0 none'), null);
    assert.equal(parseQgroupLimit('0/256 0 0'), null);
  });
});
