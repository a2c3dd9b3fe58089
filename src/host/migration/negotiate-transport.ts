import type { BtrfsFeatures, CriuType, MigrationHeader, RsyncFeatures } from './migration-codec.ts';
import type { RsyncFeature } from './rsync-args.ts';

/**
 * The rsync features both sides use. A peer that does not say `bidirectional` predates negotiation
 * (LXD ≤ 3.7) and always runs with xattrs, delete and compress: LXD assumes exactly that list for it.
 * `xxh128` only when the peer said svcdXxh128 (an svcd peer): LXD never does.
 */
export function negotiateRsyncFeatures(
  ours: readonly RsyncFeature[],
  theirs: RsyncFeatures | undefined,
): RsyncFeature[] {
  const offered: RsyncFeature[] = theirs?.bidirectional
    ? (['xattrs', 'delete', 'compress'] as const).filter((f) => theirs[f] === true)
    : ['xattrs', 'delete', 'compress'];
  if (theirs?.bidirectional && theirs.svcdXxh128 === true) offered.push('xxh128');
  return ours.filter((f) => offered.includes(f));
}

/**
 * What we offer: LXD's features set explicitly, and always `bidirectional` (see above); svcd's own field
 * only when true, so what an LXD peer reads is what LXD itself sends.
 */
export function offerRsyncFeatures(ours: readonly RsyncFeature[]): RsyncFeatures {
  return {
    xattrs: ours.includes('xattrs'),
    delete: ours.includes('delete'),
    compress: ours.includes('compress'),
    bidirectional: true,
    ...(ours.includes('xxh128') ? { svcdXxh128: true } : {}),
  };
}

/** LXD's btrfs transfer features, by their wire names (lxd/migration/utils.go). */
export type BtrfsFeature = 'migration_header' | 'header_subvolumes' | 'header_subvolume_uuids';

/**
 * The btrfsFeatures message for the features we have, filled as LXD's TypesToHeader does: the first two
 * always said (false when absent), the uuids only when had.
 */
export function offerBtrfsFeatures(ours: readonly BtrfsFeature[]): BtrfsFeatures {
  return {
    migrationHeader: ours.includes('migration_header'),
    headerSubvolumes: ours.includes('header_subvolumes'),
    ...(ours.includes('header_subvolume_uuids') ? { headerSubvolumeUuids: true } : {}),
  };
}

/** The btrfs features a header says it has. */
export function btrfsFeaturesOf(f: BtrfsFeatures | undefined): BtrfsFeature[] {
  const out: BtrfsFeature[] = [];
  if (f?.migrationHeader) out.push('migration_header');
  if (f?.headerSubvolumes) out.push('header_subvolumes');
  if (f?.headerSubvolumeUuids) out.push('header_subvolume_uuids');
  return out;
}

export type Transport = { fs: 'BTRFS'; btrfs: BtrfsFeature[] } | { fs: 'RSYNC'; rsync: RsyncFeature[] };

/**
 * The transfer method, from the other side's header, as LXD's MatchTypes picks it with rsync as the
 * fallback: btrfs send/receive when that header says BTRFS and our side can send or receive subvolume
 * streams (`ours.btrfs`: a btrfs pool), with the btrfs features both have; else rsync, which every side
 * speaks, with the common rsync features. The sink answers with the result and the source, reading that
 * answer, comes to the same one: offering RSYNC only is how a side makes the other fall back.
 */
export function negotiateTransport(
  theirs: MigrationHeader,
  ours: { btrfs?: readonly BtrfsFeature[] | undefined; rsync: readonly RsyncFeature[] },
): Transport {
  if (theirs.fs === 'BTRFS' && ours.btrfs) {
    const offered = btrfsFeaturesOf(theirs.btrfsFeatures);
    return { fs: 'BTRFS', btrfs: ours.btrfs.filter((f) => offered.includes(f)) };
  }
  return { fs: 'RSYNC', rsync: negotiateRsyncFeatures(ours.rsync, theirs.rsyncFeatures) };
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
