import { eq } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { containerRuntime, type DesiredPower, type PowerRequest } from './schema/index.ts';

/**
 * When a `PUT .../state` action cannot apply, LXD 5.0's message for it (else undefined).
 *
 * In a desired-state system "cannot apply" means: the desired power and what the observer last saw
 * of the host *both* say there is nothing to do. A start is refused only when the container is
 * desired up (running or frozen) and observed up; a stop only when it is desired stopped and
 * observed stopped. Whenever the two disagree a change is still converging (a stop not done yet, a
 * start in backoff after a crash, a freeze under way) and the action is accepted: the newest desire
 * wins and the reconciler converges it. LXD's rules, with "is" read as "is and stays":
 * - start: up → "The instance is already running" (a frozen one too; `lxc start` sends unfreeze for it)
 * - stop, restart: stopped → "The instance is already stopped"
 * - freeze: stopped → "The instance isn't running"; frozen → "The container is already frozen"
 * - unfreeze: stopped → "The container isn't running"; running → "The container is already running"
 * Transitional LXC states (STARTING, STOPPING, FREEZING, ...) settle nothing: accepted.
 * `observed` is the LXC state of the container's runtime row; none means never seen up: stopped.
 */
export function refusedPowerAction(
  action: PowerRequest['action'],
  desired: DesiredPower,
  observed: string | undefined,
): string | undefined {
  const state = observed ?? 'STOPPED';
  const stopped = desired === 'stopped' && state === 'STOPPED';
  switch (action) {
    case 'start':
      return desired !== 'stopped' && (state === 'RUNNING' || state === 'FROZEN')
        ? 'The instance is already running'
        : undefined;
    case 'stop':
    case 'restart':
      return stopped ? 'The instance is already stopped' : undefined;
    case 'freeze':
      if (stopped) return "The instance isn't running";
      return desired === 'frozen' && state === 'FROZEN' ? 'The container is already frozen' : undefined;
    case 'unfreeze':
      if (stopped) return "The container isn't running";
      return desired === 'running' && state === 'RUNNING' ? 'The container is already running' : undefined;
  }
}

/** The LXC state the observer last recorded for a container (undefined: it has no runtime row, never seen up). */
export async function readObservedState(db: DbOrTx, id: string): Promise<string | undefined> {
  const [row] = await db
    .select({ state: containerRuntime.state })
    .from(containerRuntime)
    .where(eq(containerRuntime.id, id));
  return row?.state;
}

/** PUT .../state as a level: the desired power state plus the verb that asked for it. */
export function powerFor(action: PowerRequest['action']): DesiredPower {
  return action === 'stop' ? 'stopped' : action === 'freeze' ? 'frozen' : 'running';
}
