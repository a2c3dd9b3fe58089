/** Pure pieces of the container observer: which transitions it sees, what they are called, how long a crash loop waits. */
import { computeBackoff } from '../reconcilers/runtime/backoff.ts';

/** The states a lifecycle event is about. */
export type Stable = 'RUNNING' | 'FROZEN' | 'STOPPED';

/** An LXC state → the stable state it belongs to: STARTING/ABORTING are not up yet, STOPPING/FREEZING/THAWED are still up. */
export function stableOf(state: string): Stable {
  switch (state) {
    case 'FROZEN':
      return 'FROZEN';
    case 'RUNNING':
    case 'STOPPING':
    case 'FREEZING':
    case 'THAWED':
      return 'RUNNING';
    default:
      return 'STOPPED';
  }
}

/**
 * The lifecycle action for a transition between stable states while the container is (still or
 * again) up: started, restarted (a new init: `restarting` says a stop was svcd's restart or a
 * reboot from inside), paused, resumed. A stop is not decided here (it depends on why it stopped).
 */
export function upTransitionAction(
  from: Stable,
  to: Stable,
  newInit: boolean,
  restarting: boolean,
): string | undefined {
  if (to === 'STOPPED') return undefined;
  if (from === 'STOPPED') return restarting ? 'container-restarted' : 'container-started';
  if (newInit) return 'container-restarted';
  if (from === 'RUNNING' && to === 'FROZEN') return 'container-paused';
  if (from === 'FROZEN' && to === 'RUNNING') return 'container-resumed';
  return undefined;
}

/** A run shorter than this that ends in a kill or crash counts towards the crash loop. */
export const SHORT_RUN_MS = 60_000;

/**
 * How long to wait before starting a container again after its `crashes`-th consecutive short run
 * was killed or crashed: at once the first time, then 1 s, 2 s, 4 s ... up to a minute.
 */
export function crashBackoffMs(crashes: number): number {
  return crashes <= 1 ? 0 : computeBackoff(crashes - 1, { baseMs: 1_000, maxMs: 60_000 });
}
