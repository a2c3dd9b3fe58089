import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeMigrationControl,
  decodeMigrationHeader,
  encodeMigrationControl,
  encodeMigrationHeader,
  MigrationDecodeError,
  type MigrationHeader,
} from './migration-codec.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

test("a small header encodes byte for byte as the proto2 wire format (and LXD's Go code) lays it out", () => {
  const bytes = encodeMigrationHeader({
    fs: 'RSYNC',
    criu: 'NONE',
    snapshotNames: ['s1'],
    rsyncFeatures: { xattrs: true, delete: true, compress: true, bidirectional: true },
  });
  // field 1 varint 0 | field 2 varint 2 | field 4 len 2 "s1" | field 8 len 8 { 1:1 2:1 3:1 4:1 }
  assert.equal(hex(bytes), ['0800', '1002', '2202', '7331', '4208', '0801', '1001', '1801', '2001'].join(''));
});

test('a feature set to false is sent (proto2 presence), one left out is not', () => {
  // LXD's source offers every rsync feature explicitly, false for the ones it lacks
  assert.equal(
    hex(encodeMigrationHeader({ fs: 'BTRFS', rsyncFeatures: { xattrs: false, bidirectional: true } })),
    '0801' + '4204' + '0800' + '2001',
  );
});

test('a control message encodes as LXD sends it, message always present', () => {
  assert.equal(hex(encodeMigrationControl({ success: true, message: '' })), '08011200');
  assert.equal(hex(encodeMigrationControl({ success: false, message: 'no' })), '080012026e6f');
  assert.deepEqual(decodeMigrationControl(Buffer.from('080012026e6f', 'hex')), { success: false, message: 'no' });
});

test('a full header round-trips, int64 dates and numeric architecture included', () => {
  const header: MigrationHeader = {
    fs: 'BTRFS',
    criu: 'CRIU_RSYNC',
    idmap: [
      { isuid: true, isgid: false, hostid: 1000000, nsid: 0, maprange: 1000000000 },
      { isuid: false, isgid: true, hostid: 1000000, nsid: 0, maprange: 1000000000 },
    ],
    snapshotNames: ['snap0', 'snap1'],
    snapshots: [
      {
        name: 'snap0',
        localConfig: [{ key: 'limits.cpu', value: '1' }],
        profiles: ['default'],
        ephemeral: false,
        localDevices: [
          {
            name: 'root',
            config: [
              { key: 'path', value: '/' },
              { key: 'type', value: 'disk' },
            ],
          },
        ],
        architecture: 2,
        stateful: false,
        creationDate: 1_700_000_000,
        lastUsedDate: 0,
        expiryDate: 4_102_444_800,
      },
    ],
    predump: false,
    rsyncFeatures: { xattrs: true, delete: true, compress: false, bidirectional: true },
    refresh: true,
    zfsFeatures: { compress: true },
    volumeSize: 10 * 1024 ** 3,
    btrfsFeatures: { migrationHeader: true, headerSubvolumes: true },
    indexHeaderVersion: 1,
  };
  assert.deepEqual(decodeMigrationHeader(encodeMigrationHeader(header)), header);
});

test('fields the peer did not send stay absent after decoding', () => {
  assert.deepEqual(decodeMigrationHeader(Buffer.from('0800', 'hex')), { fs: 'RSYNC' });
});

test('bad bytes and a missing required field are MigrationDecodeError', () => {
  assert.throws(
    () => decodeMigrationHeader(Buffer.from('1002', 'hex')),
    (e: unknown) => e instanceof MigrationDecodeError && /MigrationHeader.*fs/.test(e.message),
  );
  assert.throws(() => decodeMigrationHeader(Buffer.from('0880', 'hex')), MigrationDecodeError);
  assert.throws(
    () => decodeMigrationControl(Buffer.from('1200', 'hex')),
    (e: unknown) => e instanceof MigrationDecodeError && /success/.test(e.message),
  );
});

test('encoding refuses a value the schema cannot carry', () => {
  assert.throws(() => encodeMigrationHeader({ fs: 'NTFS' as never }), TypeError);
});
