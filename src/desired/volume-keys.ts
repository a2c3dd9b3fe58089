/** The config keys a storage volume takes on each driver, and their checks. */
import { DRIVERS } from '../host/storage/driver-catalog.ts';
import { isAny, isBool, isSize, type KeyTable, type ValueCheck } from './config-keys.ts';
import { parseSize } from '../util/size.ts';

/** A size the host tools can be given: well-formed and countable in bytes (`0` means no limit). */
const volumeSizeCheck: ValueCheck = (v) => {
  const err = isSize(v);
  if (err) return err;
  try {
    parseSize(v);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
};

const VOLUME_CHECKS: Record<string, ValueCheck> = {
  size: volumeSizeCheck,
  'security.unmapped': isBool,
  'block.filesystem': (v) => (['ext4', 'xfs', 'btrfs'].includes(v) ? undefined : 'must be ext4, xfs or btrfs'),
};

export function volumeKeyTable(driver: string): KeyTable {
  const exact: Record<string, ValueCheck> = {};
  for (const k of DRIVERS[driver]?.volumeKeys ?? []) exact[k] = VOLUME_CHECKS[k] ?? isAny;
  return { exact, prefixes: { 'user.': isAny }, readOnlyPrefixes: ['volatile.'] };
}
