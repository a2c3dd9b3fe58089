import { randomUUID } from 'node:crypto';
import {
  decodeMigrationControl,
  decodeMigrationHeader,
  encodeMigrationHeader,
  type MigrationHeader,
  type SnapshotEntry,
} from '../host/migration/migration-codec.ts';
import { negotiateRsyncFeatures, offerRsyncFeatures } from '../host/migration/negotiate-transport.ts';
import type { RsyncFeature } from '../host/migration/rsync-args.ts';
import { receiveTree, sendTree } from '../host/migration/rsync-transfer.ts';
import { shiftTree } from '../host/migration/shift-tree.ts';
import type { MigrationChannels } from './migration-channels.ts';
import { progressReporter } from './progress.ts';
import type { Staging } from './staging.ts';

/**
 * The stream of one volume with its snapshots, shared by containers and custom volumes: the header
 * exchange (rsync, the features both sides have, no index frame), one rsync session per snapshot
 * (oldest first), one for the volume, a final one when the source runs (criu NONE), and the sink's
 * MigrationControl verdict.
 */

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
}

/** The source's side; resolves once the sink reported success, rejects with the sink's words when it failed. */
export async function sendStream(channels: MigrationChannels, s: SendStream, ctx: TaskCtx): Promise<void> {
  await channels.control.send(
    encodeMigrationHeader({ fs: 'RSYNC', rsyncFeatures: offerRsyncFeatures(s.features), ...s.header }),
  );
  const answer = decodeMigrationHeader(await channels.control.receive());
  if (answer.fs !== 'RSYNC')
    throw new Error(`The target answered with transfer method ${answer.fs}; this server sends rsync only`);
  const features = negotiateRsyncFeatures(s.features, answer.rsyncFeatures);
  const progress = progressReporter(ctx, s.name);
  const opts = { features, signal: ctx.signal, onBytes: progress.bytes, ...(s.bwlimit ? { bwlimit: s.bwlimit } : {}) };
  // the verdict may come early (the sink failed): read it alongside the data
  const verdict = channels.control.receive().then((b) => decodeMigrationControl(b));
  const failed = verdict.then(
    (v) => (v.success ? undefined : new Error(v.message || 'the target reported a failure')),
    () => undefined,
  );
  try {
    for (const dir of s.dirs) await sendTree(channels.fs, dir, opts);
    if (s.running && answer.criu === 'NONE') await sendTree(channels.fs, s.dirs[s.dirs.length - 1]!, opts);
  } catch (e) {
    // the sink's own words, when it said why, beat "the stream broke"
    const theirs = await Promise.race([failed, new Promise<undefined>((r) => setTimeout(r, 500, undefined))]);
    throw theirs ?? e;
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
  /** Stage the volume once the header is agreed. */
  stage(): Promise<Staging>;
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
}

/** The sink's side, up to the data landed in a staged volume (the caller commits the rows, then reports). */
export async function receiveStream(channels: MigrationChannels, r: ReceiveStream, ctx: TaskCtx): Promise<Received> {
  const offer = decodeMigrationHeader(await channels.control.receive());
  r.check?.(offer);
  const finalSync = offer.criu === 'NONE';
  const features = negotiateRsyncFeatures(r.features, offer.rsyncFeatures);
  const wanted = r.volumeOnly ? [] : (offer.snapshots ?? []);
  // Older peers list names only.
  const names = r.volumeOnly ? [] : (offer.snapshotNames ?? wanted.map((s) => s.name));
  await channels.control.send(
    encodeMigrationHeader({
      fs: 'RSYNC',
      rsyncFeatures: offerRsyncFeatures(features),
      snapshotNames: names,
      snapshots: wanted,
      predump: false,
      refresh: false,
      // no index frame: our answer 0 makes the source skip it
      indexHeaderVersion: 0,
      ...(finalSync ? { criu: 'NONE' as const } : {}),
    }),
  );
  const staging = await r.stage();
  try {
    const { target } = staging;
    const progress = progressReporter(ctx, r.name);
    // A tree owned by the sender's host ids (LXD shifts root filesystems on disk) comes into container ids,
    // the form svcd keeps (idmapped mounts map it at start): after each session, before a snapshot is taken,
    // so snapshots never need a shift. The next session's rsync then only re-owns, it sends no data again.
    const session = async () => {
      await receiveTree(channels.fs, target.path, { features, signal: ctx.signal, onBytes: progress.bytes });
      if (r.shift) await shiftTree(target.path, offer.idmap ?? [], ctx.signal);
    };
    const byName = new Map(wanted.map((s) => [s.name, s]));
    const snapshots: Received['snapshots'] = [];
    for (const name of names) {
      const id = r.snapshotId?.(name) ?? randomUUID();
      await staging.addSnapshot(id);
      await session();
      await target.snapshot(id, ctx.signal);
      snapshots.push({ id, name, wire: byName.get(name) });
    }
    await session();
    if (finalSync) await session();
    await progress.flush();
    return { offer, staging, snapshots };
  } catch (e) {
    await staging.abort().catch(() => undefined);
    throw e;
  }
}
