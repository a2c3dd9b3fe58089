import path from 'node:path';
import type { HostDevicesAdapter } from '../reconcilers/adapters.ts';

/**
 * In-memory host devices for component tests: a host with no GPU, USB or InfiniBand device (a test that
 * wants them passes the real adapter over a fake sysfs tree), the interfaces in `links`, the host paths
 * in `paths`, no SR-IOV, and lxcfs running when `lxcfs` says so. Tests change the maps as the host would.
 */
export interface SimHostDevices extends HostDevicesAdapter {
  links: Map<string, 'bridge' | 'other'>;
  paths: Map<string, 'dir' | 'file'>;
  lxcfs: boolean;
}

export function createSimHostDevices(
  opts: { links?: Record<string, 'bridge' | 'other'>; paths?: Record<string, 'dir' | 'file'> } = {},
): SimHostDevices {
  const sim: SimHostDevices = {
    roots: { sysRoot: '/sim/sys', devRoot: '/sim/dev' },
    links: new Map(Object.entries(opts.links ?? {})),
    paths: new Map(Object.entries(opts.paths ?? {})),
    lxcfs: false,
    drmCards: async () => [],
    usbDevices: async () => [],
    hasUsbNode: async () => false,
    usbWatchPaths: async () => [`${path.join(sim.roots.devRoot, 'bus', 'usb')}/`],
    hasInfiniband: async () => false,
    ibPortOf: async () => undefined,
    ibNodes: async () => ({ verbs: [], mad: [] }),
    hostLink: async (name) => sim.links.get(name),
    sriov: async (parent) => ({
      ok: false,
      missing: `no /sys/class/net/${parent}/device/sriov_totalvfs (the device has no SR-IOV capability)`,
    }),
    pathKind: async (p) => sim.paths.get(p),
    submounts: async () => [],
    unsearchableDir: async () => undefined,
    hasLxcfs: () => sim.lxcfs,
    nvidiaTooling: () => ({ missing: 'nvidia-container-cli is not installed (simulated host)' }),
  };
  return sim;
}
