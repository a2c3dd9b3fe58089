import { readContainerById } from '../../desired/containers.ts';
import type { FactsRecord } from '../status-settler.ts';
import type { ContainerFacts } from './container-facts.ts';
import { removeContainer } from './remove-container.ts';
import type { ContainerReconcilerDeps } from './types.ts';

/** The facts a member recorded of a container leaving it (src/migration/leaving-marks.ts). */
export interface LeavingFacts {
  read(id: string): Promise<Record<string, unknown> | undefined>;
  remove(id: string): Promise<void>;
}

/**
 * A container that moved to another member leaves this host: stopped if it somehow runs, its LXC
 * directory, guest socket, DHCP entries, snapshots and root volume removed, as a delete does, with the
 * facts this member had of it when the move began (the new holder rewrote the row's). Its rows stay: they
 * are the new holder's. Only a container with a leaving mark is touched, so a key of another member's
 * container queued here (an API write through this member) does nothing.
 */
export function createMovedRelease(deps: ContainerReconcilerDeps, leaving: LeavingFacts) {
  return async (id: string, signal: AbortSignal): Promise<void> => {
    // Held by another member now: never started here again, whatever this host's database does.
    deps.keeper?.forget(id);
    const facts = await leaving.read(id);
    if (!facts) return;
    const c = await readContainerById(deps.db, id);
    if (c && c.location !== '') {
      const record = { facts: facts as ContainerFacts } as FactsRecord<ContainerFacts>;
      await removeContainer(deps, c, record, signal);
    }
    await leaving.remove(id);
  };
}
