import { eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { CONTAINER_KIND } from '../desired/containers.ts';
import { containerRuntime, containers } from '../desired/schema/index.ts';
import { runCommand } from '../host/exec.ts';
import { lxcLsArgs, parseLxcLs } from '../host/lxc/lxc-args.ts';
import { watchStates } from '../host/lxc/monitor.ts';
import type { PollObserver, StreamObserver } from './types.ts';

/**
 * What LXC shows of every container, with one `lxc-ls` for all of them (never a process per
 * container), written to container_runtime. A container whose observed state disagrees with its
 * desired power state is handed to its reconciler (self-healing: killed behind svcd's back → started
 * again, with the reconciler's backoff).
 */
export function createContainerObserver(deps: {
  db: Db;
  node: string;
  lxcPath: string;
  report: (kind: string, key: string, what: string) => void;
  intervalMs?: number;
}): PollObserver {
  return {
    name: 'containers',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 5_000,
    async sample(signal) {
      const [rows, runtime, listing] = await Promise.all([
        deps.db.select().from(containers).where(isNull(containers.deletingAt)),
        deps.db.select().from(containerRuntime).where(eq(containerRuntime.node, deps.node)),
        runCommand('lxc-ls', lxcLsArgs(deps.lxcPath), { signal, timeoutMs: 30_000 }).then(parseLxcLs),
      ]);
      const seen = new Map(listing.map((l) => [l.name, l]));
      const before = new Map(runtime.map((r) => [r.id, r]));
      for (const c of rows) {
        const now = seen.get(c.id);
        const state = now?.state ?? 'STOPPED';
        const pid = now?.pid ?? 0;
        const prev = before.get(c.id);
        if (!prev || prev.state !== state || prev.pid !== pid) {
          const startedAt = pid && pid !== prev?.pid ? new Date() : (prev?.startedAt ?? null);
          const values = { node: deps.node, state, pid, startedAt, observedAt: new Date() };
          await deps.db.insert(containerRuntime).values({ id: c.id, ...values }).onConflictDoUpdate({ target: containerRuntime.id, set: values });
        }
        const wantUp = c.power !== 'stopped';
        const drifted = (wantUp && state === 'STOPPED') || (!wantUp && state !== 'STOPPED') || (c.power === 'frozen' && state === 'RUNNING') || (c.power === 'running' && state === 'FROZEN');
        // Only report what changed since the last look, so a failing start is retried by the reconciler's backoff, not every tick.
        if (drifted && (!prev || prev.state !== state)) deps.report(CONTAINER_KIND, c.id, `observed ${state}, desired ${c.power}`);
      }
    },
  };
}

/** LXC's state events (lxc-monitor) make the poll observer look right away. */
export function createContainerEventsObserver(deps: { lxcPath: string; onEvent: () => void }): StreamObserver {
  return {
    name: 'container-events',
    kind: 'stream',
    run: (signal) => watchStates({ lxcPath: deps.lxcPath, signal, onEvent: () => deps.onEvent() }),
  };
}
