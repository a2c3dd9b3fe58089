import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bwlimitArg, cpArgs, rsyncArgs } from './copy-args.ts';

describe('rsyncArgs', () => {
  it('copies content with hard links, ACLs, xattrs and raw ids, deleting extras', () => {
    assert.deepEqual(rsyncArgs({ src: '/a/vol', dst: '/b/vol.partial' }), [
      '-aHAX',
      '--numeric-ids',
      '--delete',
      '/a/vol/',
      '/b/vol.partial/',
    ]);
  });

  it('compares content with --checksum when asked (restores over existing files)', () => {
    assert.deepEqual(rsyncArgs({ src: '/s', dst: '/v', checksum: true }), [
      '-aHAX',
      '--numeric-ids',
      '--delete',
      '--checksum',
      '/s/',
      '/v/',
    ]);
  });

  it('adds --bwlimit only when set, and does not double trailing slashes', () => {
    assert.deepEqual(rsyncArgs({ src: '/a/', dst: '/b//', bwlimit: '' }), [
      '-aHAX',
      '--numeric-ids',
      '--delete',
      '/a/',
      '/b/',
    ]);
    assert.deepEqual(rsyncArgs({ src: '/a', dst: '/b', bwlimit: '2000' }), [
      '-aHAX',
      '--numeric-ids',
      '--delete',
      '--bwlimit=2000',
      '/a/',
      '/b/',
    ]);
  });
});

describe('bwlimitArg', () => {
  it('passes a bare number (KiB/s) and converts units to KiB/s', () => {
    assert.equal(bwlimitArg('500'), '500');
    assert.equal(bwlimitArg('10MiB'), '10240');
    assert.equal(bwlimitArg('10MB'), '9766');
    assert.equal(bwlimitArg('10 MB'), '9766');
    assert.equal(bwlimitArg('100B'), '1');
    assert.equal(bwlimitArg('0B'), '0');
  });

  it('rejects anything that could be read as an option', () => {
    assert.throws(() => bwlimitArg('--delete'), /invalid rsync.bwlimit/);
    assert.throws(() => bwlimitArg('fast'), /invalid rsync.bwlimit/);
  });
});

describe('cpArgs', () => {
  it('copies the content of src into dst, reflinking where possible', () => {
    assert.deepEqual(cpArgs({ src: '/p/custom/v/', dst: '/p/custom-snapshots/v/s.partial' }), [
      '-a',
      '--reflink=auto',
      '/p/custom/v/.',
      '/p/custom-snapshots/v/s.partial/',
    ]);
  });
});
