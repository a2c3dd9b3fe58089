/** Pure argv builders for btrfs-progs, and the parser for `btrfs qgroup show`. */

export const btrfsArgs = {
  mkfs: (label: string, target: string) => ['-L', label, target],
  quotaEnable: (mountPoint: string) => ['quota', 'enable', mountPoint],
  subvolumeCreate: (p: string) => ['subvolume', 'create', p],
  subvolumeDelete: (p: string) => ['subvolume', 'delete', p],
  /** Read-only (`-r`) for snapshots; writable for copies and restores. */
  snapshot: (src: string, dst: string, readOnly: boolean) => [
    'subvolume',
    'snapshot',
    ...(readOnly ? ['-r'] : []),
    src,
    dst,
  ],
  /** Limit the referenced size of the subvolume's qgroup; undefined clears it (`none`). */
  qgroupLimit: (bytes: number | undefined, p: string) => [
    'qgroup',
    'limit',
    bytes === undefined ? 'none' : String(bytes),
    p,
  ],
  /** Only the path's own qgroup (`-f`), with its referenced limit (`-r`), in bytes. */
  qgroupShow: (p: string) => ['qgroup', 'show', '-rf', '--raw', p],
  resizeMax: (mountPoint: string) => ['filesystem', 'resize', 'max', mountPoint],
  /** A snapshot made writable is made read-only again (a received one's flag is not touched: it would lose its received uuid). */
  setReadOnly: (p: string) => ['property', 'set', '-ts', p, 'ro', 'true'],
  /**
   * A received subvolume made writable: btrfs-progs refuses it without `-f`, which also clears the received
   * uuid (done only once every stream of a transfer is in: none is a parent any more).
   */
  setReceivedWritable: (p: string) => ['property', 'set', '-f', '-ts', p, 'ro', 'false'],
  /** A subvolume stream, incremental on `parent` when given (LXD's migration sends exactly this). */
  send: (p: string, parent?: string) => ['send', ...(parent ? ['-p', parent] : []), p],
  /** One stream into `dir`, ending at the stream's end marker (`-e`, as LXD receives). */
  receive: (dir: string) => ['receive', '-e', dir],
};

/**
 * The referenced-size limit of the first level-0 qgroup in `btrfs qgroup show -rf --raw` output:
 * a number of bytes, undefined for `none`, or null when the output has no such row.
 *
 *     Qgroupid    Referenced    Exclusive  Max referenced   Path
 *     --------    ----------    ---------  --------------   ----
 *     0/256                0            0        52428800   v
 */
export function parseQgroupLimit(output: string): number | undefined | null {
  for (const line of output.split('\n')) {
    const cols = line.trim().split(/\s+/);
    if (!/^0\/\d+$/.test(cols[0] ?? '')) continue;
    const max = cols[3];
    if (max === 'none') return undefined;
    if (max !== undefined && /^\d+$/.test(max)) return Number(max);
    return null;
  }
  return null;
}
