/**
 * Storage drivers on this host: whether the host can run each one (probed from PATH tools and kernel
 * facts without spawning), and the factory for the implemented ones. Which names exist and which keys
 * each accepts is data, in `host/storage/driver-catalog.ts`.
 */
import { createBtrfsDriver } from './btrfs.ts';
import { createDirDriver } from './dir.ts';
import { StorageUnsupportedError } from './errors.ts';
import { createHostChecker } from './host-checker.ts';
import type { HostChecker } from './host-checker.ts';
import type { StorageDriver } from './types.ts';
import { DRIVERS, type ProbeResult } from './driver-catalog.ts';

export { DRIVERS };
export type { DriverEntry, ProbeResult } from './driver-catalog.ts';

/** One thing a driver needs; `label` is how a refusal names it. */
export type Requirement =
  | { kind: 'tools'; label: string; tools: string[] }
  | { kind: 'kernel'; label: string; check: (c: HostChecker) => Promise<boolean> };

const inText = (file: string, word: RegExp) => async (c: HostChecker) => word.test((await c.readText(file)) ?? '');

/** Kernel support first, then tools (the order a refusal lists them in). */
export const REQUIREMENTS: Record<string, Requirement[]> = {
  dir: [],
  btrfs: [{ kind: 'tools', label: 'btrfs tools', tools: ['mkfs.btrfs', 'btrfs'] }],
  lvm: [
    {
      kind: 'kernel',
      label: 'device-mapper kernel support (/dev/mapper/control)',
      check: async (c) =>
        (await c.exists('/dev/mapper/control')) && (await inText('/proc/misc', /\sdevice-mapper$/m)(c)),
    },
    { kind: 'tools', label: 'lvm tools', tools: ['lvm', 'vgcreate', 'lvcreate'] },
  ],
  zfs: [
    {
      kind: 'kernel',
      label: 'zfs kernel module (zfs in /proc/filesystems or /sys/module/zfs)',
      check: async (c) => (await inText('/proc/filesystems', /\szfs$/m)(c)) || (await c.exists('/sys/module/zfs')),
    },
    { kind: 'tools', label: 'zfs tools', tools: ['zfs', 'zpool'] },
  ],
  ceph: [
    // Whether rbd could be loaded is unknown without modprobe: only a loaded module counts.
    { kind: 'kernel', label: 'rbd kernel module (/sys/module/rbd)', check: (c) => c.exists('/sys/module/rbd') },
    { kind: 'tools', label: 'ceph tools', tools: ['ceph', 'rbd'] },
  ],
};

/** Can this host run the driver? Missing items are worded for a refusal message. */
export async function probeDriver(name: string, opts: { checker?: HostChecker } = {}): Promise<ProbeResult> {
  const requirements = REQUIREMENTS[name];
  if (!requirements || !DRIVERS[name]) throw new RangeError(`unknown storage driver ${JSON.stringify(name)}`);
  const checker = opts.checker ?? createHostChecker();
  const missing: string[] = [];
  for (const req of requirements) {
    if (req.kind === 'kernel') {
      if (!(await req.check(checker))) missing.push(req.label);
      continue;
    }
    const absent: string[] = [];
    for (const tool of req.tools) if (!(await checker.hasTool(tool))) absent.push(tool);
    if (absent.length > 0) missing.push(`${req.label} (${absent.join(', ')})`);
  }
  return missing.length === 0 ? { ok: true } : { ok: false, missing };
}

/** `lvm is not available on this host: missing device-mapper kernel support (/dev/mapper/control), lvm tools (vgcreate, lvcreate)` */
export function describeUnavailable(name: string, missing: readonly string[]): string {
  return `${name} is not available on this host: missing ${missing.join(', ')}`;
}

/** Probe, and throw a {@link StorageUnsupportedError} worded for the user when the driver cannot run here. */
export async function requireDriver(name: string, opts: { checker?: HostChecker } = {}): Promise<void> {
  const res = await probeDriver(name, opts);
  if (!res.ok) throw new StorageUnsupportedError(describeUnavailable(name, res.missing));
}

export interface StorageDrivers {
  /** The (one per set) driver for a name; throws for names svcd does not implement. */
  driverFor(name: string): StorageDriver;
}

/** One instance of each implemented driver, created on first use. */
export function createStorageDrivers(): StorageDrivers {
  const made = new Map<string, StorageDriver>();
  return {
    driverFor(name) {
      let driver = made.get(name);
      if (!driver) made.set(name, (driver = createDriver(name)));
      return driver;
    },
  };
}

/** The driver implementation for `dir` or `btrfs`; other known names are refused as not implemented. */
export function createDriver(name: string): StorageDriver {
  if (name === 'dir') return createDirDriver();
  if (name === 'btrfs') return createBtrfsDriver();
  if (DRIVERS[name]) throw new StorageUnsupportedError(`storage driver ${name} is not implemented by svcd yet`);
  throw new RangeError(`unknown storage driver ${JSON.stringify(name)}`);
}
