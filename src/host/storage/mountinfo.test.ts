import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  findMount,
  hasMountOption,
  isMountPoint,
  mountAt,
  parseMountinfo,
  parseMountinfoLine,
  unescapeMountField,
} from './mountinfo.ts';

const SAMPLE = [
  '22 27 0:21 / /proc rw,relatime - proc proc rw',
  '27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard',
  '43 27 0:39 / /var/lib/svcd/storage-pools/p rw,relatime shared:5 master:2 - btrfs /dev/loop0 rw,space_cache=v2,user_subvol_rm_allowed,subvolid=5,subvol=/',
  '44 27 0:40 /sub\\040dir /mnt/my\\040pool\\011tab rw - btrfs /dev/my\\134disk rw,subvolid=256,subvol=/sub dir',
  '45 27 0:41 / /srv/xfs rw,noatime - xfs /dev/sdb1 rw,attr2,inode64,prjquota',
  '46 43 0:42 / /var/lib/svcd/storage-pools/p rw - tmpfs tmpfs rw',
  '',
].join('\n');

describe('parseMountinfo', () => {
  const mounts = parseMountinfo(SAMPLE);

  it('parses every well-formed line in order', () => {
    assert.deepEqual(
      mounts.map((m) => m.id),
      [22, 27, 43, 44, 45, 46],
    );
  });

  it('splits the fields around the separator, keeping optional fields', () => {
    const m = mounts[2];
    assert.ok(m);
    assert.equal(m.parentId, 27);
    assert.equal(m.major, 0);
    assert.equal(m.minor, 39);
    assert.equal(m.root, '/');
    assert.equal(m.mountPoint, '/var/lib/svcd/storage-pools/p');
    assert.deepEqual(m.options, ['rw', 'relatime']);
    assert.deepEqual(m.optionalFields, ['shared:5', 'master:2']);
    assert.equal(m.fsType, 'btrfs');
    assert.equal(m.source, '/dev/loop0');
    assert.ok(m.superOptions.includes('user_subvol_rm_allowed'));
  });

  it('decodes octal escapes in root, mount point and source', () => {
    const m = mounts[3];
    assert.ok(m);
    assert.equal(m.root, '/sub dir');
    assert.equal(m.mountPoint, '/mnt/my pool\ttab');
    assert.equal(m.source, '/dev/my\\disk');
    assert.deepEqual(m.optionalFields, []);
  });

  it('skips malformed lines', () => {
    assert.equal(parseMountinfoLine('garbage'), undefined);
    assert.equal(parseMountinfoLine('1 2 0:3 / /x rw no-separator-here ext4 /dev/x rw'), undefined);
    assert.equal(parseMountinfoLine('x 2 0:3 / /x rw - ext4 /dev/x rw'), undefined);
    assert.equal(parseMountinfo('junk\n\n').length, 0);
  });

  it('unescapes only three-digit octal escapes', () => {
    assert.equal(unescapeMountField('a\\040b\\012c\\134d\\9'), 'a b\nc\\d\\9');
  });
});

describe('findMount / isMountPoint', () => {
  const mounts = parseMountinfo(SAMPLE);

  it('picks the longest mount-point prefix', () => {
    assert.equal(findMount(mounts, '/srv/xfs/a/b')?.fsType, 'xfs');
    assert.equal(findMount(mounts, '/srv/xfsother')?.mountPoint, '/');
    assert.equal(findMount(mounts, '/proc/1/status')?.fsType, 'proc');
    assert.equal(findMount(mounts, '/')?.fsType, 'ext4');
  });

  it('picks the topmost of stacked mounts', () => {
    assert.equal(findMount(mounts, '/var/lib/svcd/storage-pools/p/custom')?.fsType, 'tmpfs');
    assert.equal(mountAt(mounts, '/var/lib/svcd/storage-pools/p')?.id, 46);
  });

  it('normalises paths and tells mount points from plain directories', () => {
    assert.equal(isMountPoint(mounts, '/var/lib/svcd/storage-pools/p/'), true);
    assert.equal(isMountPoint(mounts, '/var/lib/svcd/storage-pools/p/../p'), true);
    assert.equal(isMountPoint(mounts, '/var/lib/svcd/storage-pools'), false);
    assert.equal(isMountPoint(mounts, '/mnt/my pool\ttab'), true);
  });

  it('finds options per mount and per superblock', () => {
    const xfs = findMount(mounts, '/srv/xfs');
    assert.ok(xfs);
    assert.equal(hasMountOption(xfs, 'prjquota'), true);
    assert.equal(hasMountOption(xfs, 'noatime'), true);
    assert.equal(hasMountOption(xfs, 'pquota'), false);
  });
});
