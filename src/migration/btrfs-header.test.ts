import assert from 'node:assert/strict';
import { test } from 'node:test';
import { btrfsHeaderFor, decodeBtrfsHeader, encodeBtrfsHeader, planReceive } from './btrfs-header.ts';

// As LXD 5.0.2 marshals its BTRFSMetaDataHeader for a container with one snapshot and a nested subvolume
const LXD_HEADER =
  '{"subvolumes":[{"path":"/","snapshot":"snap0","readonly":true,"uuid":"6d7c2e1a-0e0b-7a4d-9d43-8f1d1a3c5b21"},' +
  '{"path":"/","snapshot":"","readonly":false,"uuid":"0c7f0e52-59a4-0b4c-8d6b-3bd8e6f1f4a9"},' +
  '{"path":"/var/lib/machines","snapshot":"","readonly":false,"uuid":""}]}';

test("what svcd sends is LXD's JSON, field names and order as its struct tags", () => {
  assert.equal(
    Buffer.from(encodeBtrfsHeader(btrfsHeaderFor(['s1', 's2']))).toString(),
    '{"subvolumes":[{"path":"/","snapshot":"s1","readonly":true,"uuid":""},' +
      '{"path":"/","snapshot":"s2","readonly":true,"uuid":""},' +
      '{"path":"/","snapshot":"","readonly":false,"uuid":""}]}',
  );
});

test("LXD's header decodes; the streams come snapshot roots first, then the volume's; nested ones are not sent", () => {
  const h = decodeBtrfsHeader(Buffer.from(LXD_HEADER));
  assert.equal(h.length, 3);
  assert.deepEqual(h[0], {
    path: '/',
    snapshot: 'snap0',
    readonly: true,
    uuid: '6d7c2e1a-0e0b-7a4d-9d43-8f1d1a3c5b21',
  });
  assert.deepEqual(planReceive(h, ['snap0']), ['snap0', '']);
  // container_only: the snapshot is listed but not wanted
  assert.deepEqual(planReceive(btrfsHeaderFor([]), []), ['']);
});

test('a header Go wrote for no subvolumes (null), garbage, or one without a root is refused', () => {
  assert.deepEqual(decodeBtrfsHeader(Buffer.from('{"subvolumes":null}')), []);
  assert.throws(() => planReceive([], []), /0 root subvolumes for the volume/);
  assert.throws(() => decodeBtrfsHeader(Buffer.from('{"subvolumes":')), /invalid btrfs migration header/);
  assert.throws(() => decodeBtrfsHeader(Buffer.from('{"subvolumes":[{"snapshot":""}]}')), /no path/);
  assert.throws(() => planReceive(btrfsHeaderFor(['a']), ['a', 'b']), /snapshot "b"/);
});
