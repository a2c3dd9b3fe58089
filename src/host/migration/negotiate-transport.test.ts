import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  LiveMigrationRefused,
  btrfsFeaturesOf,
  negotiateCriu,
  negotiateRsyncFeatures,
  negotiateTransport,
  offerBtrfsFeatures,
  offerRsyncFeatures,
} from './negotiate-transport.ts';
import { decodeMigrationHeader, encodeMigrationHeader } from './migration-codec.ts';

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

test('btrfs features: what LXD 5.0.2 sets in its offer, and what a header says', () => {
  // TypesToHeader: migration_header and header_subvolumes always present (false when absent), uuids only when had
  assert.deepEqual(offerBtrfsFeatures(['migration_header']), { migrationHeader: true, headerSubvolumes: false });
  assert.deepEqual(offerBtrfsFeatures(['migration_header', 'header_subvolumes', 'header_subvolume_uuids']), {
    migrationHeader: true,
    headerSubvolumes: true,
    headerSubvolumeUuids: true,
  });
  assert.deepEqual(btrfsFeaturesOf({ migrationHeader: true, headerSubvolumes: false }), ['migration_header']);
  assert.deepEqual(btrfsFeaturesOf(undefined), []);
});

test('transport: btrfs with the common features when their header says BTRFS and we are btrfs, else rsync', () => {
  // what LXD 5.0.2 sends from a btrfs pool: BTRFS preferred, its rsync features for the fallback
  const lxdOffer = encodeMigrationHeader({
    fs: 'BTRFS',
    btrfsFeatures: { migrationHeader: true, headerSubvolumes: true, headerSubvolumeUuids: true },
    rsyncFeatures: { xattrs: true, delete: true, compress: true, bidirectional: true },
  });
  const offer = decodeMigrationHeader(lxdOffer);
  const ours = { btrfs: ['migration_header'] as const, rsync: ['xattrs', 'delete'] as const };
  assert.deepEqual(negotiateTransport(offer, ours), { fs: 'BTRFS', btrfs: ['migration_header'] });
  // a dir pool has no btrfs: the rsync fallback with the common rsync features
  assert.deepEqual(negotiateTransport(offer, { rsync: ['xattrs', 'delete'] }), {
    fs: 'RSYNC',
    rsync: ['xattrs', 'delete'],
  });
  // they offer (or answer) RSYNC only: rsync, even between btrfs pools
  const rsyncOnly = decodeMigrationHeader(
    encodeMigrationHeader({ fs: 'RSYNC', rsyncFeatures: { xattrs: true, delete: false, bidirectional: true } }),
  );
  assert.deepEqual(negotiateTransport(rsyncOnly, ours), { fs: 'RSYNC', rsync: ['xattrs'] });
  // an older btrfs peer without the header feature: btrfs still, no header frame
  assert.deepEqual(negotiateTransport({ fs: 'BTRFS' }, ours), { fs: 'BTRFS', btrfs: [] });
  // ZFS is not ours: the rsync fallback
  assert.deepEqual(negotiateTransport({ fs: 'ZFS' }, ours).fs, 'RSYNC');
});

test('criu: none for a stateless copy, a live one refused', () => {
  assert.equal(negotiateCriu(false, 'NONE'), 'NONE');
  assert.equal(negotiateCriu(false, undefined), 'NONE');
  assert.throws(() => negotiateCriu(true, 'NONE'), LiveMigrationRefused);
  assert.throws(() => negotiateCriu(false, 'CRIU_RSYNC'), /CRIU/);
});

test("xxh128 is svcd's own: offered in field 1000 only when had, agreed only with a peer that said it", () => {
  assert.deepEqual(offerRsyncFeatures(['xattrs', 'xxh128']), {
    xattrs: true,
    delete: false,
    compress: false,
    bidirectional: true,
    svcdXxh128: true,
  });
  // an LXD peer never says it: MD5, as LXD's rsync runs
  const lxd = { xattrs: true, delete: true, compress: false, bidirectional: true };
  assert.deepEqual(negotiateRsyncFeatures(['xattrs', 'delete', 'xxh128'], lxd), ['xattrs', 'delete']);
  assert.deepEqual(negotiateRsyncFeatures(['xattrs', 'delete', 'xxh128'], { ...lxd, svcdXxh128: true }), [
    'xattrs',
    'delete',
    'xxh128',
  ]);
  // nor does a peer from before negotiation
  assert.deepEqual(negotiateRsyncFeatures(['xattrs', 'xxh128'], { svcdXxh128: true }), ['xattrs']);
  // on the wire: field 1000 (varint tag 0x1f40 → c0 3e), which LXD's decoder skips as unknown
  const bytes = encodeMigrationHeader({ fs: 'RSYNC', rsyncFeatures: offerRsyncFeatures(['xxh128']) });
  assert.match(Buffer.from(bytes).toString('hex'), /c03e01/);
  assert.equal(decodeMigrationHeader(bytes).rsyncFeatures?.svcdXxh128, true);
  assert.equal(
    decodeMigrationHeader(encodeMigrationHeader({ fs: 'RSYNC', rsyncFeatures: offerRsyncFeatures(['xattrs']) }))
      .rsyncFeatures?.svcdXxh128,
    undefined,
  );
});
