import type { PoolHealth, VolumeRef } from '../../host/storage/types.ts';
import { createKeyedMutex } from '../../util/keyed-mutex.ts';
import type { Clock } from '../runtime/index.ts';

/** How long a pool's health check answers for (concurrent reconciles share one check). */
const HEALTH_MS = 1_000;

/**
 * What the root volume steps (ensure-rootfs.ts) remember between reconciles: one per agent, created in
 * agent.ts and shared by the container and image-volume reconcilers (which serialize on its locks).
 */
export interface RootfsState {
  /** The pool's health as checked at most HEALTH_MS ago; a failing check is not kept. */
  recentHealth(key: string, check: () => Promise<PoolHealth>): Promise<PoolHealth>;
  /** One unpack at a time per (pool, image): concurrent creates from a new image wait for the first one's. */
  imageVolumeLocks: ReturnType<typeof createKeyedMutex>;
  /** Image volumes known complete, by `<pool>\0<fingerprint>` (their rows and facts need no re-reading). */
  readyImageVolumes: Map<string, VolumeRef>;
}

export function createRootfsState(deps: { clock: Pick<Clock, 'now'> }): RootfsState {
  const healthChecks = new Map<string, { at: number; health: Promise<PoolHealth> }>();
  return {
    recentHealth(key, check) {
      const hit = healthChecks.get(key);
      if (hit && deps.clock.now() - hit.at < HEALTH_MS) return hit.health;
      const health = check();
      const entry = { at: deps.clock.now(), health };
      healthChecks.set(key, entry);
      const forget = () => {
        if (healthChecks.get(key) === entry) healthChecks.delete(key);
      };
      health.then((h) => void (h.ready || forget()), forget);
      return health;
    },
    imageVolumeLocks: createKeyedMutex(),
    readyImageVolumes: new Map(),
  };
}
