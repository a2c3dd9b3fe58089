/**
 * The storage driver contract: the only place that touches pool and volume data on the host.
 * Every `ensure…` is idempotent (converges from any partial state) and every `remove…` treats
 * absence as success, so reconcilers can call them again after any crash.
 */

export interface PoolSpec {
  name: string;
  driver: string;
  /** Desired pool config (validated): source, size, btrfs.mount_options, ... */
  config: Record<string, string>;
  /** svcd's state directory: default sources live under it (`<stateDir>/storage-pools/<name>`, `<stateDir>/disks/<name>.img`). */
  stateDir: string;
}

/**
 * Volumes are stored under a stable id, never their name: renaming a volume or snapshot is a pure
 * database change and cannot leave the host half-renamed.
 */
export interface VolumeRef {
  /** Stable id (uuid) chosen by the database. */
  id: string;
  /** `custom`, `container` or `image`. */
  type: 'custom' | 'container' | 'image';
}

export interface SnapshotRef {
  volume: VolumeRef;
  /** Stable id (uuid) of the snapshot. */
  id: string;
}

export interface PoolUsage {
  space: { used: number; total: number };
  inodes: { used: number; total: number };
}

export interface PoolHealth {
  /** Mounted (or, for a plain directory, present) and usable. */
  ready: boolean;
  /** Why not, in words a user can act on (e.g. "backing file /x/y.img is missing"). */
  problem?: string;
}

export interface StorageDriver {
  readonly name: 'dir' | 'btrfs';
  /** Where the pool's data lives on the host once ready. Pure. */
  poolPath(pool: PoolSpec): string;
  /** Create the backing store if absent (loop file + mkfs, directory), attach it (losetup), mount it; undo its own partial steps on failure. */
  ensurePool(pool: PoolSpec, signal?: AbortSignal): Promise<void>;
  /** Unmount, detach, and delete what svcd created (loop file, default directory); a user-given source is left in place (only svcd's own subdirectories are removed). */
  removePool(pool: PoolSpec, signal?: AbortSignal): Promise<void>;
  /** Cheap check, no process spawned: is the pool mounted/present? */
  poolHealth(pool: PoolSpec): Promise<PoolHealth>;
  /** statfs of the pool path: no process spawned. */
  poolUsage(pool: PoolSpec): Promise<PoolUsage>;
  /** Apply changed mount options to a mounted pool. */
  remountPool?(pool: PoolSpec, signal?: AbortSignal): Promise<void>;
  /** Grow the pool to config.size (btrfs loop file); refuse to shrink. */
  resizePool?(pool: PoolSpec, signal?: AbortSignal): Promise<void>;

  volumePath(pool: PoolSpec, vol: VolumeRef): string;
  /** Create an empty volume if absent, then apply `size` ("" or absent = no limit). */
  ensureVolume(
    pool: PoolSpec,
    vol: VolumeRef,
    opts: { size?: string | undefined },
    signal?: AbortSignal,
  ): Promise<void>;
  removeVolume(pool: PoolSpec, vol: VolumeRef, signal?: AbortSignal): Promise<void>;
  /** Create `dst` as a copy of `src` (or of `srcSnapshot`), which may be on another pool/driver; idempotent: a complete dst is left alone, a partial one is redone. */
  copyVolume(
    src: { pool: PoolSpec; driver: StorageDriver; vol: VolumeRef; snapshot?: SnapshotRef | undefined },
    dst: { pool: PoolSpec; vol: VolumeRef },
    opts: { bwlimit?: string | undefined },
    signal?: AbortSignal,
  ): Promise<void>;
  volumeExists(pool: PoolSpec, vol: VolumeRef): Promise<boolean>;

  snapshotPath(pool: PoolSpec, snap: SnapshotRef): string;
  /** Whether the snapshot is on the pool (its path is there). */
  snapshotExists(pool: PoolSpec, snap: SnapshotRef): Promise<boolean>;
  /** Read-only point-in-time copy (btrfs: subvolume snapshot -r; dir: copy). */
  ensureSnapshot(pool: PoolSpec, snap: SnapshotRef, signal?: AbortSignal): Promise<void>;
  removeSnapshot(pool: PoolSpec, snap: SnapshotRef, signal?: AbortSignal): Promise<void>;
  /** Replace the volume's content with the snapshot's. */
  restoreSnapshot(pool: PoolSpec, snap: SnapshotRef, signal?: AbortSignal): Promise<void>;
  /** Only drivers whose volumes are btrfs subvolumes: migration by `btrfs send`/`receive`. */
  subvolumeStreams?: SubvolumeStreams;
  /**
   * Only drivers whose snapshots are full copies (dir): a snapshot built in place. `begin` makes its empty
   * `.partial` directory (which removeSnapshot removes too) and returns it; `adopt` moves it into place.
   */
  snapshotLanding?: {
    begin(pool: PoolSpec, snap: SnapshotRef): Promise<string>;
    adopt(pool: PoolSpec, snap: SnapshotRef): Promise<void>;
  };
}

/**
 * How received subvolume streams become a pool's own volume and snapshots. Streams land in a directory
 * of the pool (the volume's landing path, which removeVolume removes too) as read-only subvolumes;
 * adopting makes the pool's usual subvolumes from them: a writable volume, read-only snapshots.
 */
export interface SubvolumeStreams {
  landingPath(pool: PoolSpec, vol: VolumeRef): string;
  /**
   * The snapshot, as a read-only snapshot of `from` (a read-only one keeps its received uuid, which the
   * next incremental stream finds its parent by). With `edit`, a writable snapshot is edited in place
   * (the id shift of a tree from LXD), then made read-only.
   */
  adoptSnapshot(
    pool: PoolSpec,
    snap: SnapshotRef,
    from: string,
    edit?: (path: string) => Promise<void>,
    signal?: AbortSignal,
  ): Promise<void>;
  /**
   * The volume: `from` made writable (losing its received uuid) and moved into place; the landing path is
   * removed after.
   */
  adoptVolume(pool: PoolSpec, vol: VolumeRef, from: string, signal?: AbortSignal): Promise<void>;
}

/** Capabilities as data: what each driver name can do here, and what config keys it accepts. */
export interface DriverInfo {
  name: string;
  /** Pool config keys this driver accepts (beyond user.*). */
  poolKeys: string[];
  /** Volume config keys this driver accepts (beyond user.*). */
  volumeKeys: string[];
}
