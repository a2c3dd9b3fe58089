import type { Announced } from './announce.ts';
import type { LiveFacts } from './ensure-live.ts';
import type { NetworkNicsFacts } from './ensure-network-nics.ts';
import type { RootfsFacts } from './ensure-rootfs.ts';
import type { LogDirFacts } from './follow-log-dir.ts';
import type { KnownIbPort } from './resolve-hw-devices.ts';

/** What the container reconciler remembers of one container between passes (its reconcile facts). */
export interface ContainerFacts extends RootfsFacts, NetworkNicsFacts, LogDirFacts {
  /** Image templates still to render for the new root volume (recorded before it is filled). */
  pendingTemplates?: 'create' | 'copy';
  /** The last power request carried out. */
  doneSeq?: number;
  /** The last snapshot restore carried out. */
  restoredSeq?: number;
  /** What the last lifecycle announcement said (announce.ts). */
  announced?: Announced;
  /** While it runs: what was mounted in it live and the config it was started with (ensure-live.ts). */
  live?: LiveFacts;
  /** infiniband device → its InfiniBand device and port, as last resolved (resolve-hw-devices.ts). */
  infiniband?: Record<string, KnownIbPort>;
}

/**
 * The facts a container keeps when it moves to another member: what describes its volume and its requests
 * carried out (so no restore or power request is done twice, pending templates still apply), without what
 * describes the old member's host (its live state, DHCP entries, log directory, InfiniBand ports).
 */
export function movedFacts(f: ContainerFacts): ContainerFacts {
  const { live: _live, dhcpHosts: _dhcp, logDir: _log, infiniband: _ib, ...kept } = f;
  return kept;
}
