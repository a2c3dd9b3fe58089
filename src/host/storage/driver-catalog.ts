/**
 * Storage drivers as data: which names exist, which config keys each accepts, and whether svcd
 * implements it. Pure, so validation reads it without loading the drivers; whether this host can
 * run one is a probe (`host/storage/registry.ts`) that the caller passes in.
 */
import type { DriverInfo } from './types.ts';

export type DriverEntry = DriverInfo & {
  /**
   * `yes`: svcd implements it (usable once {@link probeDriver} is ok; dir always is); `probe`: svcd does
   * not implement it, the probe only tells a user what this host lacks.
   */
  available: 'yes' | 'probe';
};

const BLOCK_VOLUME_KEYS = ['size', 'security.unmapped', 'block.filesystem', 'block.mount_options'];

export const DRIVERS: Record<string, DriverEntry> = {
  dir: {
    name: 'dir',
    available: 'yes',
    poolKeys: ['source', 'size', 'volume.size', 'rsync.bwlimit'],
    volumeKeys: ['size', 'security.unmapped'],
  },
  btrfs: {
    name: 'btrfs',
    available: 'yes',
    poolKeys: ['source', 'size', 'volume.size', 'btrfs.mount_options', 'rsync.bwlimit'],
    volumeKeys: ['size', 'security.unmapped'],
  },
  lvm: {
    name: 'lvm',
    available: 'probe',
    poolKeys: [
      'source',
      'size',
      'volume.size',
      'volume.block.filesystem',
      'volume.block.mount_options',
      'lvm.thinpool_name',
      'lvm.vg_name',
      'rsync.bwlimit',
    ],
    volumeKeys: BLOCK_VOLUME_KEYS,
  },
  zfs: {
    name: 'zfs',
    available: 'probe',
    poolKeys: ['source', 'size', 'volume.size', 'zfs.pool_name', 'rsync.bwlimit'],
    volumeKeys: ['size', 'security.unmapped'],
  },
  ceph: {
    name: 'ceph',
    available: 'probe',
    poolKeys: [
      'source',
      'volume.size',
      'volume.block.filesystem',
      'volume.block.mount_options',
      'ceph.cluster_name',
      'ceph.osd.pool_name',
      'ceph.user.name',
      'ceph.osd.force_reuse',
      'rsync.bwlimit',
    ],
    volumeKeys: BLOCK_VOLUME_KEYS,
  },
};

/** Can this host run a driver? Missing items are worded for a refusal message. */
export type ProbeResult = { ok: true } | { ok: false; missing: string[] };
