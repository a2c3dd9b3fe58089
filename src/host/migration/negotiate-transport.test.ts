import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  LiveMigrationRefused,
  negotiateCriu,
  negotiateFsType,
  negotiateRsyncFeatures,
  offerRsyncFeatures,
} from './negotiate-transport.ts';

test('rsync features: the ones both sides offer', () => {
  assert.deepEqual(
    negotiateRsyncFeatures(['xattrs', 'delete', 'compress'], {
      xattrs: true,
      delete: false,
      compress: true,
      bidirectional: true,
    }),
    ['xattrs', 'compress'],
  );
  assert.deepEqual(
    negotiateRsyncFeatures(['delete'], { xattrs: true, delete: true, compress: true, bidirectional: true }),
    ['delete'],
  );
});

test('a peer without bidirectional is assumed to want xattrs, delete and compress', () => {
  assert.deepEqual(negotiateRsyncFeatures(['xattrs', 'delete', 'compress'], { xattrs: false }), [
    'xattrs',
    'delete',
    'compress',
  ]);
  assert.deepEqual(negotiateRsyncFeatures(['xattrs', 'delete', 'compress'], undefined), [
    'xattrs',
    'delete',
    'compress',
  ]);
  assert.deepEqual(negotiateRsyncFeatures(['xattrs'], { bidirectional: false, delete: true }), ['xattrs']);
});

test('our offer always says bidirectional and every feature explicitly', () => {
  assert.deepEqual(offerRsyncFeatures(['xattrs']), {
    xattrs: true,
    delete: false,
    compress: false,
    bidirectional: true,
  });
});

test('btrfs only when offered and both pools are btrfs, else rsync', () => {
  assert.equal(negotiateFsType('BTRFS', true, true), 'BTRFS');
  assert.equal(negotiateFsType('BTRFS', true, false), 'RSYNC');
  assert.equal(negotiateFsType('BTRFS', false, true), 'RSYNC');
  assert.equal(negotiateFsType('RSYNC', true, true), 'RSYNC');
  assert.equal(negotiateFsType('ZFS', false, false), 'RSYNC');
});

test('criu: none for a stateless copy, a live one refused', () => {
  assert.equal(negotiateCriu(false, 'NONE'), 'NONE');
  assert.equal(negotiateCriu(false, undefined), 'NONE');
  assert.throws(() => negotiateCriu(true, 'NONE'), LiveMigrationRefused);
  assert.throws(() => negotiateCriu(false, 'CRIU_RSYNC'), /CRIU/);
});
