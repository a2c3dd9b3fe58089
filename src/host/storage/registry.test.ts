import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StorageUnsupportedError } from './errors.ts';
import type { HostChecker } from './host-checker.ts';
import {
  DRIVERS,
  createDriver,
  createStorageDrivers,
  describeUnavailable,
  probeDriver,
  requireDriver,
} from './registry.ts';

/** A host described as data: tools on PATH, existing files, file contents. */
function fakeHost(h: { tools?: string[]; files?: Record<string, string> }): HostChecker {
  const files = h.files ?? {};
  return {
    hasTool: async (t) => (h.tools ?? []).includes(t),
    exists: async (p) => p in files,
    readText: async (p) => files[p],
  };
}

const DM_MISC = '237 loop-control\n236 device-mapper\n';

describe('DRIVERS', () => {
  it('lists the five drivers with their keys', () => {
    assert.deepEqual(Object.keys(DRIVERS).sort(), ['btrfs', 'ceph', 'dir', 'lvm', 'zfs']);
    assert.deepEqual(DRIVERS.dir?.poolKeys, ['source', 'size', 'volume.size', 'rsync.bwlimit']);
    assert.ok(DRIVERS.btrfs?.poolKeys.includes('btrfs.mount_options'));
    assert.ok(DRIVERS.lvm?.poolKeys.includes('lvm.thinpool_name'));
    assert.ok(DRIVERS.ceph?.poolKeys.includes('ceph.osd.force_reuse'));
    assert.ok(!DRIVERS.ceph?.poolKeys.includes('size'));
    assert.deepEqual(DRIVERS.btrfs?.volumeKeys, ['size', 'security.unmapped']);
    assert.deepEqual(DRIVERS.lvm?.volumeKeys, ['size', 'security.unmapped', 'block.filesystem', 'block.mount_options']);
  });

  it('marks what svcd implements', () => {
    assert.deepEqual(
      Object.values(DRIVERS)
        .filter((d) => d.available === 'yes')
        .map((d) => d.name),
      ['dir', 'btrfs'],
    );
  });
});

describe('probeDriver', () => {
  it('dir needs nothing', async () => {
    assert.deepEqual(await probeDriver('dir', { checker: fakeHost({}) }), { ok: true });
  });

  it('names missing kernel support first, then only the missing tools', async () => {
    const res = await probeDriver('lvm', { checker: fakeHost({ tools: ['lvm'] }) });
    assert.deepEqual(res, {
      ok: false,
      missing: ['device-mapper kernel support (/dev/mapper/control)', 'lvm tools (vgcreate, lvcreate)'],
    });
    assert.ok(!res.ok);
    assert.equal(
      describeUnavailable('lvm', res.missing),
      'lvm is not available on this host: missing device-mapper kernel support (/dev/mapper/control), lvm tools (vgcreate, lvcreate)',
    );
  });

  it('lvm needs both /dev/mapper/control and device-mapper in /proc/misc', async () => {
    const tools = ['lvm', 'vgcreate', 'lvcreate'];
    assert.deepEqual(
      await probeDriver('lvm', {
        checker: fakeHost({ tools, files: { '/dev/mapper/control': '', '/proc/misc': DM_MISC } }),
      }),
      { ok: true },
    );
    const noMisc = await probeDriver('lvm', {
      checker: fakeHost({ tools, files: { '/dev/mapper/control': '', '/proc/misc': '237 loop-control\n' } }),
    });
    assert.equal(noMisc.ok, false);
  });

  it('zfs accepts /proc/filesystems or /sys/module/zfs', async () => {
    const tools = ['zfs', 'zpool'];
    assert.deepEqual(
      await probeDriver('zfs', {
        checker: fakeHost({ tools, files: { '/proc/filesystems': 'nodev\tproc\n\tzfs\n' } }),
      }),
      { ok: true },
    );
    assert.deepEqual(await probeDriver('zfs', { checker: fakeHost({ tools, files: { '/sys/module/zfs': '' } }) }), {
      ok: true,
    });
    assert.deepEqual(
      await probeDriver('zfs', { checker: fakeHost({ files: { '/proc/filesystems': '\tzfsfoo\n' } }) }),
      {
        ok: false,
        missing: ['zfs kernel module (zfs in /proc/filesystems or /sys/module/zfs)', 'zfs tools (zfs, zpool)'],
      },
    );
  });

  it('ceph counts only a loaded rbd module', async () => {
    assert.deepEqual(await probeDriver('ceph', { checker: fakeHost({ tools: ['ceph', 'rbd'] }) }), {
      ok: false,
      missing: ['rbd kernel module (/sys/module/rbd)'],
    });
    assert.deepEqual(
      await probeDriver('ceph', { checker: fakeHost({ tools: ['ceph', 'rbd'], files: { '/sys/module/rbd': '' } }) }),
      { ok: true },
    );
  });

  it('btrfs needs its tools', async () => {
    assert.deepEqual(await probeDriver('btrfs', { checker: fakeHost({ tools: ['btrfs'] }) }), {
      ok: false,
      missing: ['btrfs tools (mkfs.btrfs)'],
    });
    await assert.rejects(requireDriver('btrfs', { checker: fakeHost({}) }), (e: unknown) => {
      assert.ok(e instanceof StorageUnsupportedError);
      assert.equal(e.message, 'btrfs is not available on this host: missing btrfs tools (mkfs.btrfs, btrfs)');
      return true;
    });
  });

  it('refuses unknown names', async () => {
    await assert.rejects(probeDriver('nope', { checker: fakeHost({}) }), RangeError);
  });
});

describe('createDriver / createStorageDrivers', () => {
  it('makes dir and btrfs, refuses the others', () => {
    assert.equal(createDriver('dir').name, 'dir');
    assert.equal(createDriver('btrfs').name, 'btrfs');
    assert.throws(() => createDriver('zfs'), StorageUnsupportedError);
    assert.throws(() => createDriver('floppy'), RangeError);
  });

  it('hands out one instance per name', () => {
    const drivers = createStorageDrivers();
    assert.equal(drivers.driverFor('dir'), drivers.driverFor('dir'));
    assert.notEqual(drivers.driverFor('dir'), drivers.driverFor('btrfs'));
  });
});
