import type { CriuType, MigrationFsType, RsyncFeatures } from './migration-codec.ts';
import type { RsyncFeature } from './rsync-args.ts';

/**
 * The rsync features both sides use. A peer that does not say `bidirectional` predates negotiation
 * (LXD ≤ 3.7) and always runs with xattrs, delete and compress: LXD assumes exactly that list for it.
 */
export function negotiateRsyncFeatures(
  ours: readonly RsyncFeature[],
  theirs: RsyncFeatures | undefined,
): RsyncFeature[] {
  const offered: RsyncFeature[] = theirs?.bidirectional
    ? (['xattrs', 'delete', 'compress'] as const).filter((f) => theirs[f] === true)
    : ['xattrs', 'delete', 'compress'];
  return ours.filter((f) => offered.includes(f));
}

/** What we offer: every feature we run with set explicitly, and always `bidirectional` (see above). */
export function offerRsyncFeatures(ours: readonly RsyncFeature[]): Required<RsyncFeatures> {
  return {
    xattrs: ours.includes('xattrs'),
    delete: ours.includes('delete'),
    compress: ours.includes('compress'),
    bidirectional: true,
  };
}

/**
 * The transfer method: btrfs send/receive only when the peer offers it and both pools are btrfs
 * (a subvolume stream cannot land anywhere else); rsync, which every side supports, otherwise.
 */
export function negotiateFsType(
  offered: MigrationFsType,
  ourPoolIsBtrfs: boolean,
  theirPoolIsBtrfs: boolean,
): MigrationFsType {
  return offered === 'BTRFS' && ourPoolIsBtrfs && theirPoolIsBtrfs ? 'BTRFS' : 'RSYNC';
}

export class LiveMigrationRefused extends Error {
  constructor() {
    super('live migration is not supported: this host has no CRIU (use --stateless, or stop the container)');
    this.name = 'LiveMigrationRefused';
  }
}

/** The checkpoint method: none, always; a live (CRIU) request is refused, since this host has no CRIU. */
export function negotiateCriu(live: boolean, offered: CriuType | undefined): 'NONE' {
  if (live || (offered !== undefined && offered !== 'NONE')) throw new LiveMigrationRefused();
  return 'NONE';
}
