import { randomUUID } from 'node:crypto';
import {
  decodeMigrationControl,
  decodeMigrationHeader,
  encodeMigrationHeader,
  type MigrationHeader,
  type SnapshotEntry,
} from '../host/migration/migration-codec.ts';
import {
  type BtrfsFeature,
  negotiateRsyncFeatures,
  negotiateTransport,
  offerBtrfsFeatures,
  offerRsyncFeatures,
} from '../host/migration/negotiate-transport.ts';
import type { RsyncFeature } from '../host/migration/rsync-args.ts';
import {
  receiveTree,
  sendTree,
  type TransferOptions,
  withLocalRsyncFeatures,
} from '../host/migration/rsync-transfer.ts';
import { withEarlyWriteback } from '../host/migration/early-writeback.ts';
import { shiftRules, shiftTree } from '../host/migration/shift-tree.ts';
import { syncFilesystem } from '../host/storage/sync-filesystem.ts';
import { type BtrfsSource, receiveSubvolumes, sendSubvolumes } from './btrfs-stream.ts';
import type { MigrationChannels } from './migration-channels.ts';
import { progressReporter } from './progress.ts';
import type { Staging } from './staging.ts';

/**
 * The stream of one volume with its snapshots, shared by containers and custom volumes: the header
 * exchange (the transfer method and its features both sides have, no index frame), then the data:
 * between two btrfs pools btrfs send/receive (btrfs-stream.ts); otherwise one rsync session per snapshot
 * (oldest first), one for the volume, a final one when the source runs (criu NONE). Then the sink's
 * MigrationControl verdict.
 */

/**
 * The btrfs features svcd has: the JSON header. Not `header_subvolumes` (nested subvolumes in a volume:
 * LXD then refuses a volume holding some, and svcd's own never hold any it sends) nor
 * `header_subvolume_uuids` (only for refreshes, which svcd refuses).
 */
const BTRFS_FEATURES: readonly BtrfsFeature[] = ['migration_header'];

export interface TaskCtx {
  signal: AbortSignal;
  setMetadata(m: Record<string, unknown>): Promise<void>;
}

export interface SendStream {
  /** The rest of our header: snapshots, criu, idmap. */
  header: Omit<MigrationHeader, 'fs' | 'rsyncFeatures'>;
  /** The snapshots' directories, oldest first, then the volume's. */
  dirs: string[];
  /** The source runs: a final sync of the volume once the sink agreed criu NONE. */
  running: boolean;
  features: readonly RsyncFeature[];
  bwlimit?: string;
  /** fs_progress names this volume. */
  name: string;
  /** On a btrfs pool, every subvolume in place: offer BTRFS, and send these if the sink agrees. */
  btrfs?: BtrfsSource | undefined;
}

/** The source's side; resolves once the sink reported success, rejects with the sink's words when it failed. */
export async function sendStream(channels: MigrationChannels, s: SendStream, ctx: TaskCtx): Promise<void> {
  const ours = await withLocalRsyncFeatures(s.features);
  await channels.control.send(
    encodeMigrationHeader({
      fs: s.btrfs ? 'BTRFS' : 'RSYNC',
      ...(s.btrfs ? { btrfsFeatures: offerBtrfsFeatures(BTRFS_FEATURES) } : {}),
      // with BTRFS too: the rsync fallback's features, for a sink that cannot take btrfs streams
      rsyncFeatures: offerRsyncFeatures(ours),
      ...s.header,
    }),
  );
  const answer = decodeMigrationHeader(await channels.control.receive());
  const transport = negotiateTransport(answer, { btrfs: s.btrfs && BTRFS_FEATURES, rsync: ours });
  const progress = progressReporter(ctx, s.name);
  // the verdict may come early (the sink failed): read it alongside the data
  const verdict = channels.control.receive().then((b) => decodeMigrationControl(b));
  const failed = verdict.then(
    (v) => (v.success ? undefined : new Error(v.message || 'the target reported a failure')),
    () => undefined,
  );
  // the sink's failure stops the data at once: a sender blocked on a stream nobody reads would wait forever
  const stop = new AbortController();
  const cancel = () => stop.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', cancel, { once: true });
  void failed.then((e) => e && stop.abort(e));
  const signal = stop.signal;
  try {
    if (transport.fs === 'BTRFS') {
      const io = { signal, onBytes: progress.bytes };
      await sendSubvolumes(channels, s.btrfs!, s.header.snapshotNames ?? [], transport.btrfs, io);
    } else {
      const opts = {
        features: transport.rsync,
        signal,
        onBytes: progress.bytes,
        ...(s.bwlimit ? { bwlimit: s.bwlimit } : {}),
      };
      for (const dir of s.dirs) await sendTree(channels.fs, dir, opts);
      if (s.running && answer.criu === 'NONE') await sendTree(channels.fs, s.dirs[s.dirs.length - 1]!, opts);
    }
  } catch (e) {
    // the sink's own words, when it said why, beat "the stream broke"
    const theirs = await Promise.race([failed, new Promise<undefined>((r) => setTimeout(r, 500, undefined))]);
    throw theirs ?? e;
  } finally {
    ctx.signal.removeEventListener('abort', cancel);
  }
  await progress.flush();
  const v = await verdict;
  if (!v.success) throw new Error(v.message || 'the target reported a failure');
}

export interface ReceiveStream {
  features: readonly RsyncFeature[];
  /** Without snapshots (container_only, volume_only). */
  volumeOnly: boolean;
  /** Refuse what this side cannot do with the offer (a live migration), before answering. */
  check?(offer: MigrationHeader): void;
  /** The pool takes subvolume streams (btrfs): answer a BTRFS offer with BTRFS. */
  subvolumes: boolean;
  /** Stage the volume once the header is agreed (`streams`: it will be adopted from btrfs streams). */
  stage(o: { streams: boolean }): Promise<Staging>;
  /** Shift each session's tree from the sender's on-disk map (containers). */
  shift: boolean;
  name: string;
  /** The id each snapshot is made under, by name (a move keeps its rows); default a fresh one. */
  snapshotId?(name: string): string;
}

export interface Received {
  offer: MigrationHeader;
  staging: Staging;
  /** The snapshots made, oldest first, with what the offer said of each (absent from older peers). */
  snapshots: { id: string; name: string; wire: SnapshotEntry | undefined }[];
  /** How the data came: btrfs send/receive or rsync. */
  fs: 'BTRFS' | 'RSYNC';
  /** The rsync features both sides ran with (none for btrfs streams). */
  rsync: RsyncFeature[];
}

/** The sink's side, up to the data landed in a staged volume (the caller commits the rows, then reports). */
export async function receiveStream(channels: MigrationChannels, r: ReceiveStream, ctx: TaskCtx): Promise<Received> {
  const offer = decodeMigrationHeader(await channels.control.receive());
  r.check?.(offer);
  const ours = await withLocalRsyncFeatures(r.features);
  const transport = negotiateTransport(offer, { btrfs: r.subvolumes ? BTRFS_FEATURES : undefined, rsync: ours });
  const features = negotiateRsyncFeatures(ours, offer.rsyncFeatures);
  const finalSync = offer.criu === 'NONE' && transport.fs === 'RSYNC';
  const wanted = r.volumeOnly ? [] : (offer.snapshots ?? []);
  // Older peers list names only.
  const names = r.volumeOnly ? [] : (offer.snapshotNames ?? wanted.map((s) => s.name));
  await channels.control.send(
    encodeMigrationHeader({
      fs: transport.fs,
      ...(transport.fs === 'BTRFS' ? { btrfsFeatures: offerBtrfsFeatures(transport.btrfs) } : {}),
      rsyncFeatures: offerRsyncFeatures(features),
      snapshotNames: names,
      snapshots: wanted,
      predump: false,
      refresh: false,
      // no index frame: our answer 0 makes the source skip it
      indexHeaderVersion: 0,
      // the source says it runs: LXD's sink answers NONE whatever the transfer
      ...(offer.criu === 'NONE' ? { criu: 'NONE' as const } : {}),
    }),
  );
  const staging = await r.stage({ streams: transport.fs === 'BTRFS' });
  try {
    const { target } = staging;
    const progress = progressReporter(ctx, r.name);
    const byName = new Map(wanted.map((s) => [s.name, s]));
    // On disk before the sink reports success: a move deletes its source then. Most of it already is
    // (early-writeback.ts), so this last sync of the pool is short.
    const onDisk = (p: string) => syncFilesystem(p, ctx.signal);
    if (transport.fs === 'BTRFS') {
      const idmap = offer.idmap ?? [];
      const shift =
        r.shift && shiftRules(idmap).length > 0
          ? async (dir: string) => void (await shiftTree(dir, idmap, ctx.signal))
          : undefined;
      const io = { signal: ctx.signal, onBytes: progress.bytes, shift };
      // LXD's sender ends a stream with a barrier even when its btrfs send failed, then says so here
      const theirs = channels.control.receive().then(
        (b) => decodeMigrationControl(b),
        () => undefined,
      );
      const ids = await receiveSubvolumes(channels, staging, names, transport.btrfs, io);
      const said = await Promise.race([theirs, new Promise<undefined>((r) => setTimeout(r, 100, undefined))]);
      if (said && !said.success) throw new Error(said.message || 'the source reported a failure');
      await onDisk(target.path);
      await progress.flush();
      const snapshots = names.map((name, i) => ({ id: ids[i]!, name, wire: byName.get(name) }));
      return { offer, staging, snapshots, fs: 'BTRFS', rsync: [] };
    }
    // A tree owned by the sender's host ids (LXD shifts root filesystems on disk) comes into container ids,
    // the form svcd keeps (idmapped mounts map it at start): after each session, before a snapshot is taken,
    // so snapshots never need a shift. The next session's rsync then only re-owns, it sends no data again.
    // What rsync writes goes to disk while the session runs (early-writeback.ts), not all at the final sync.
    const session = async (dir: string, basis?: TransferOptions['basis']) => {
      await withEarlyWriteback(dir, { signal: ctx.signal, onBytes: progress.bytes }, (onBytes) =>
        receiveTree(channels.fs, dir, { features, signal: ctx.signal, onBytes, basis }),
      );
      if (r.shift) await shiftTree(dir, offer.idmap ?? [], ctx.signal);
    };
    // Where snapshots are copies (dir), each lands in its own place, its unchanged files hard links to the
    // one before (snapshots are never written to), and the volume's are copied from the last: each byte is
    // written once for the snapshots and once for the volume, not once more for every snapshot after it.
    // (A file the shift re-owned differs from the one sent, so it is never linked.)
    let basis: string | undefined;
    const snapshots: Received['snapshots'] = [];
    for (const name of names) {
      const id = r.snapshotId?.(name) ?? randomUUID();
      await staging.addSnapshot(id);
      if (target.landSnapshot) {
        const land = await target.landSnapshot(id);
        await session(land.path, basis ? { dir: basis, mode: 'link' } : undefined);
        basis = await land.adopt();
      } else {
        await session(target.path);
        await target.snapshot(id, ctx.signal);
      }
      snapshots.push({ id, name, wire: byName.get(name) });
    }
    await session(target.path, basis ? { dir: basis, mode: 'copy' } : undefined);
    if (finalSync) await session(target.path);
    await onDisk(target.path);
    await progress.flush();
    return { offer, staging, snapshots, fs: 'RSYNC', rsync: features };
  } catch (e) {
    await staging.abort().catch(() => undefined);
    throw e;
  }
}
