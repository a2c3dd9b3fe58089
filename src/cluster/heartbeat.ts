import type { Db } from '../db/types.ts';
import type { Clock, TimerHandle } from '../reconcilers/runtime/index.ts';
import { renewHeartbeat } from './members.ts';

/** How often a member renews its row: well inside the smallest offline threshold worth setting. */
export const HEARTBEAT_MS = 3_000;

/**
 * Renews this member's heartbeat row every `intervalMs` (one UPDATE). A failed renewal (the database away)
 * is logged once per outage and tried again at the next tick; the other members then see this one Offline.
 */
export function createHeartbeat(deps: {
  db: Db;
  name: string;
  clock: Clock;
  log: { warn(o: object, m?: string): void; info(o: object, m?: string): void };
  intervalMs?: number;
}): { start(): void; stop(): void } {
  const intervalMs = deps.intervalMs ?? HEARTBEAT_MS;
  let timer: TimerHandle | undefined;
  let stopped = false;
  let failing = false;
  const tick = async () => {
    try {
      const present = await renewHeartbeat(deps.db, deps.name);
      if (!present && !failing)
        deps.log.warn({ member: deps.name }, 'this member has no row: it was removed from the cluster');
      if (failing && present) deps.log.info({ member: deps.name }, 'heartbeat renewed again');
      failing = !present;
    } catch (err) {
      if (!failing) deps.log.warn({ err, member: deps.name }, 'cannot renew the heartbeat (tried again)');
      failing = true;
    }
    if (!stopped) timer = deps.clock.setTimer(() => void tick(), intervalMs);
  };
  return {
    start() {
      stopped = false;
      timer = deps.clock.setTimer(() => void tick(), intervalMs);
    },
    stop() {
      stopped = true;
      if (timer) deps.clock.clearTimer(timer);
    },
  };
}
