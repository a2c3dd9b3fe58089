import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { receiveFrame, receiveSubvolume, sendFrame, sendSubvolume } from '../host/migration/btrfs-transfer.ts';
import type { BtrfsFeature } from '../host/migration/negotiate-transport.ts';
import { btrfsHeaderFor, decodeBtrfsHeader, encodeBtrfsHeader, planReceive } from './btrfs-header.ts';
import type { MigrationChannels } from './migration-channels.ts';
import type { Staging } from './staging.ts';

/**
 * The data of a migration by btrfs send/receive, as LXD 5.0.2 does it between two btrfs pools: the
 * JSON header frame when `migration_header` is agreed, then one stream per snapshot, oldest first, each
 * incremental on the one before (`btrfs send -p`), then the volume, incremental on the last snapshot.
 * No final sync for a running container: the volume is sent from a read-only snapshot taken at that
 * moment (LXD refuses MultiSync with an optimized transfer).
 */

export interface BtrfsSource {
  /** The snapshots' read-only subvolumes, oldest first. */
  snapshots: string[];
  /** The volume as a read-only subvolume to send from, released once sent. */
  volume(signal: AbortSignal): Promise<{ path: string; release(): Promise<void> }>;
}

interface Io {
  signal: AbortSignal;
  onBytes: (total: number) => void;
}

export async function sendSubvolumes(
  channels: MigrationChannels,
  src: BtrfsSource,
  snapshotNames: readonly string[],
  features: readonly BtrfsFeature[],
  io: Io,
): Promise<void> {
  if (features.includes('migration_header'))
    await sendFrame(channels.fs, encodeBtrfsHeader(btrfsHeaderFor(snapshotNames)));
  let parent: string | undefined;
  for (const snap of src.snapshots) {
    await sendSubvolume(channels.fs, snap, parent, io);
    parent = snap;
  }
  const held = await src.volume(io.signal);
  try {
    await sendSubvolume(channels.fs, held.path, parent, io);
  } finally {
    await held.release();
  }
}

/**
 * The sink's side: every stream lands in the staged volume's landing path first (a snapshot's stream
 * is the parent the next one is applied to, so none is touched until all are in), then the snapshots
 * and the volume are adopted as the pool's own subvolumes, shifted on the way when `shift` is given.
 * Resolves with the snapshots' new ids, oldest first.
 */
export async function receiveSubvolumes(
  channels: MigrationChannels,
  staging: Staging,
  snapshotNames: readonly string[],
  features: readonly BtrfsFeature[],
  io: Io & { shift?: ((dir: string) => Promise<void>) | undefined },
): Promise<string[]> {
  const streams = staging.streams;
  if (!streams) throw new Error('the staged volume cannot take subvolume streams');
  const header = features.includes('migration_header')
    ? decodeBtrfsHeader(await receiveFrame(channels.fs))
    : btrfsHeaderFor(snapshotNames);
  const plan = planReceive(header, snapshotNames);
  const received: string[] = [];
  for (const [i] of plan.entries())
    received.push(await receiveSubvolume(channels.fs, path.join(streams.landing, String(i)), io));
  const ids: string[] = [];
  for (const [i, from] of received.slice(0, -1).entries()) {
    const id = randomUUID();
    await staging.addSnapshot(id);
    await streams.adoptSnapshot(id, from, io.shift, io.signal);
    ids[i] = id;
  }
  await streams.adoptVolume(received[received.length - 1]!, io.signal);
  if (io.shift) await io.shift(staging.target.path);
  return ids;
}
