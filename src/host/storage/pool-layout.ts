/** Where pools, volumes and snapshots live on disk: pure path arithmetic shared by the drivers. */
import path from 'node:path';
import type { SnapshotRef, VolumeRef } from './types.ts';

/** The subdirectories svcd creates in every pool. */
export const POOL_SUBDIRS = ['custom', 'custom-snapshots', 'containers', 'images'] as const;

const TYPE_DIRS: Record<VolumeRef['type'], string> = { custom: 'custom', container: 'containers', image: 'images' };

/** Every subdirectory svcd may have made in a pool (the created ones plus lazily made snapshot dirs). */
export const OWN_SUBDIRS: readonly string[] = [
  ...Object.values(TYPE_DIRS),
  ...Object.values(TYPE_DIRS).map((d) => `${d}-snapshots`),
];

/** `custom`, `containers` or `images`. */
export function volumeDirName(type: VolumeRef['type']): string {
  return TYPE_DIRS[type];
}

/** `custom-snapshots`, `containers-snapshots` or `images-snapshots`. */
export function snapshotDirName(type: VolumeRef['type']): string {
  return `${TYPE_DIRS[type]}-snapshots`;
}

/** `<pool>/<type-dir>/<id>` */
export function volumePathIn(poolPath: string, vol: VolumeRef): string {
  return path.join(poolPath, volumeDirName(vol.type), safeId(vol.id));
}

/** `<pool>/<type-dir>-snapshots/<volumeId>` (holds the volume's snapshots). */
export function snapshotParentIn(poolPath: string, vol: VolumeRef): string {
  return path.join(poolPath, snapshotDirName(vol.type), safeId(vol.id));
}

/** `<pool>/<type-dir>-snapshots/<volumeId>/<snapId>` */
export function snapshotPathIn(poolPath: string, snap: SnapshotRef): string {
  return path.join(snapshotParentIn(poolPath, snap.volume), safeId(snap.id));
}

/** Ids become path components: refuse anything that could escape the pool. */
function safeId(id: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(id) || id.includes('..'))
    throw new RangeError(`invalid storage id ${JSON.stringify(id)}`);
  return id;
}
