import { existsSync } from 'node:fs';
import type { HostDevicesAdapter } from '../../reconcilers/adapters.ts';
import { findNvidiaTooling } from './nvidia-tooling.ts';
import { readDrmCards } from './read-drm-cards.ts';
import { readHostLink } from './read-host-link.ts';
import { findUnsearchableDir, listSubmounts, readPathKind } from './read-host-path.ts';
import { hasInfiniband, readIbNodes, readIbPortOf } from './read-infiniband.ts';
import { readSriov } from './read-sriov.ts';
import { hasUsbNode, readUsbDevices, usbWatchPaths } from './read-usb-devices.ts';
import { HOST_SYSFS, type SysfsRoots } from './sysfs-roots.ts';

/** Where a running lxcfs serves its /proc files (what lxcfs's LXC mount hook binds into containers). */
const LXCFS_PROC = '/var/lib/lxcfs/proc';

/**
 * The host's devices as the container reconciler reads them. gpu, usb and infiniband under `roots` (a fake
 * tree in tests, `SVCD_SYSFS_ROOT`); network interfaces always from the host's own /sys, where its bridges are.
 */
export function createHostDevicesAdapter(roots: SysfsRoots = HOST_SYSFS): HostDevicesAdapter {
  return {
    roots,
    drmCards: () => readDrmCards(roots),
    usbDevices: () => readUsbDevices(roots),
    hasUsbNode,
    usbWatchPaths: () => usbWatchPaths(roots),
    hasInfiniband: () => hasInfiniband(roots),
    ibPortOf: (ifname) => readIbPortOf(roots, ifname),
    ibNodes: (port) => readIbNodes(roots, port),
    hostLink: (name) => readHostLink(name),
    sriov: (parent) => readSriov(parent),
    pathKind: readPathKind,
    submounts: listSubmounts,
    unsearchableDir: findUnsearchableDir,
    hasLxcfs: () => existsSync(LXCFS_PROC),
    nvidiaTooling: () => findNvidiaTooling(),
  };
}
