export type * from './types.ts';
export { createBtrfsDriver } from './btrfs.ts';
export { createDirDriver, probeProjectQuota } from './dir.ts';
export { StorageUnsupportedError, isStorageUnsupportedError } from './errors.ts';
export {
  DRIVERS,
  createDriver,
  createStorageDrivers,
  describeUnavailable,
  probeDriver,
  requireDriver,
} from './registry.ts';
export type { DriverEntry, ProbeResult, StorageDrivers } from './registry.ts';
