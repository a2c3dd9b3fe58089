import { readContainerById, recordContainerPoweredOff, CONTAINER_KIND } from '../desired/containers.ts';
import type { ContainerRow } from '../desired/schema/index.ts';
import { stopCauseOf, type InitExit } from '../host/lxc/init-exit.ts';
import { restartInFlight } from '../reconcilers/container/restart-in-flight.ts';
import { crashBackoffMs, SHORT_RUN_MS, type Stable } from './container-transitions.ts';
import type { ContainerObserverDeps } from './container-observer-deps.ts';

/** A reboot from inside: LXC starts the container again by itself; if it is not back by then, svcd starts it. */
const REBOOT_GRACE_MS = 30_000;

/** What this process has seen of one container (a fresh svcd starts from the runtime rows). */
export interface Seen {
  stable: Stable;
  /** The last init pid seen while up, and since when (ms). */
  pid: number;
  upSince: number;
  /** The LXC log of the run of `pid` (its log directory is named after the container's name at start). */
  logFile: string;
  /** The next start is a restart: svcd's own restart, or a reboot from inside. */
  restarting: boolean;
  /** Rebooting from inside: start it ourselves if it is still stopped after this. */
  rebootUntil?: number | undefined;
  /** Consecutive short runs that ended killed or crashed (the crash loop backoff). */
  crashes: number;
  /** Killed in a crash loop: report drift (start again) once this time has come. */
  startAfter?: number | undefined;
}

/**
 * The container went from up to stopped: whose doing was it, and what follows (the container observer's
 * judgement, see container-observer.ts). Updates `m`, writes desired state on the owner's behalf, reports drift.
 */
export function createStopJudge(
  deps: Pick<ContainerObserverDeps, 'db' | 'lxc' | 'lxcPath' | 'initExit' | 'log' | 'report' | 'reportAfter'> & {
    now: () => number;
    lifecycle: (c: ContainerRow, action: string) => void;
    retire: (c: ContainerRow, why: string) => Promise<void>;
  },
): (id: string, m: Seen) => Promise<void> {
  const { db, now, lifecycle, retire } = deps;
  return async function stopped(id: string, m: Seen): Promise<void> {
    const c = await readContainerById(db, id);
    if (!c || c.deletingAt) return;
    if (await restartInFlight(db, c)) {
      m.restarting = true;
      return;
    }
    if (c.power === 'stopped') {
      lifecycle(c, 'container-stopped');
      if (c.ephemeral) await retire(c, 'stopped');
      return;
    }
    // Up again already (a restart svcd finished meanwhile, or LXC's own after a reboot): nothing to judge.
    const live = await deps.lxc.state({ name: c.id, lxcPath: deps.lxcPath }).catch(() => undefined);
    if (live && live.state !== 'STOPPED') {
      m.restarting = true;
      m.rebootUntil = now() + REBOOT_GRACE_MS;
      return;
    }
    const exit: InitExit = await deps.initExit
      .readInitExit(m.logFile, m.pid || undefined)
      .catch(() => ({ kind: 'unknown' }) as const);
    const cause = stopCauseOf(exit);
    const ctx = { container: c.name, project: c.project, pid: m.pid, exit, cause };
    switch (cause) {
      case 'reboot':
        m.restarting = true;
        m.rebootUntil = now() + REBOOT_GRACE_MS;
        deps.log?.info(ctx, 'container rebooted from inside');
        return;
      case 'poweroff': {
        lifecycle(c, 'container-shutdown');
        if (c.ephemeral) return retire(c, 'powered off from inside');
        const row = await recordContainerPoweredOff(db, c.id, c.generation);
        deps.log?.info({ ...ctx, desired: row ? 'stopped' : 'changed meanwhile' }, 'container powered off from inside');
        deps.report(CONTAINER_KIND, c.id, 'powered off from inside');
        return;
      }
      default: {
        lifecycle(c, 'container-stopped');
        m.crashes = now() - m.upSince < SHORT_RUN_MS ? m.crashes + 1 : 1;
        const delay = crashBackoffMs(m.crashes);
        deps.log?.warn(
          { ...ctx, crashes: m.crashes, restartInMs: delay },
          "container stopped behind svcd's back; starting it again",
        );
        if (delay === 0) deps.report(CONTAINER_KIND, c.id, `observed STOPPED, desired ${c.power} (${cause})`);
        else {
          // The start again is scheduled for when the backoff is over; the looks only stay quiet until then
          // (and, should that reconcile not bring it up, report it once the time has come).
          m.startAfter = now() + delay;
          deps.reportAfter(
            CONTAINER_KIND,
            c.id,
            delay,
            `observed STOPPED, desired ${c.power} (${cause}, crash loop backoff of ${delay} ms over)`,
          );
        }
      }
    }
  };
}
