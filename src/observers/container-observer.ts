import path from 'node:path';
import { eq } from 'drizzle-orm';
import { CONTAINER_KIND, containerUrl, readContainerById, retireEphemeralContainer } from '../desired/containers.ts';
import { containerRuntime, type ContainerRow } from '../desired/schema/index.ts';
import { recordContainerRuntime } from '../desired/container-runtime.ts';
import { emitLifecycle } from '../events/index.ts';
import type { LxcState } from '../host/lxc/lxc-args.ts';
import type { LxcMonitorEvent } from '../host/lxc/monitor.ts';
import { stableOf, upTransitionAction } from './container-transitions.ts';
import { createSampleRows } from './sample-rows.ts';
import { createRoundRobin } from './round-robin.ts';
import { createStopJudge, type Seen } from './container-stop-judge.ts';
import type { PollObserver } from './types.ts';
import type { ContainerObserverDeps } from './container-observer-deps.ts';

export type { ContainerObserverDeps };

export { createContainerEventsObserver } from './container-events-observer.ts';
import { logDirOf } from '../host/layout.ts';

type RuntimeRow = typeof containerRuntime.$inferSelect;

/** How long an lxc-monitor RUNNING/FROZEN event waits for a reconcile's report before its own look. */
const MONITOR_LOOK_DELAY_MS = 250;

/**
 * What LXC shows of every container, written to container_runtime, and what each change means. Three
 * kinds of look, all judged the same way: a periodic sample with one listing (procfs and cgroupfs reads,
 * host/lxc/host-states.ts: no process, where `lxc-ls` cost ~1.5 ms of CPU per container) of every container,
 * or beyond `perTick` of a round-robin slice of them (~0.1 ms of reads each); the outcome a reconcile reports (no process at all); and an lxc-monitor
 * event for one container (one `lxc-info` when it needs the init pid). What each change means:
 *
 * - lifecycle events when a change is seen: container-started, -restarted, -paused, -resumed,
 *   -stopped, -shutdown (it powered itself off);
 * - a container that stopped while desired running is asked why, from its LXC log (init-exit.ts):
 *   powered off from inside (init's reboot(2) → SIGINT, or a clean exit) → desired power `stopped`
 *   (a desired write on the owner's behalf); killed or crashed → drift, so the reconciler starts it
 *   again, at once the first time and with a backoff when it keeps dying young; rebooted → LXC
 *   starts it again itself. A stop during svcd's own restart, or of a container desired stopped,
 *   is svcd's: never a power-off;
 * - an ephemeral container that stopped (not during a restart) is marked for deletion;
 * - any other disagreement with the desired power state is drift, reported when it changes (so a
 *   failing start is retried by the reconciler's backoff, not every tick).
 *
 * What happened while svcd was not running is not judged: at the first look the runtime rows only
 * seed what this process has seen, and the boot plan decides what runs.
 */
export interface ContainerObserver extends PollObserver {
  /** Look at one container now: with what the caller just saw, or else with one lxc-info. */
  observe(id: string, seen?: { state: LxcState; pid?: number | undefined }, row?: ContainerRow): Promise<void>;
  /** An lxc-monitor event: a settled state that differs from what was last seen gets a look. */
  onMonitorEvent(ev: LxcMonitorEvent): void;
}

export function createContainerObserver(deps: ContainerObserverDeps): ContainerObserver {
  const { db } = deps;
  const now = deps.now ?? Date.now;
  const memory = new Map<string, Seen>();
  /**
   * Runtime rows as this observer last wrote or read them, when svcd is the database's only writer
   * (PGlite): a look then needs no read of its row. (Only looks write them; a removal deletes the
   * container's row with it.) A container known to have no row (never seen up) maps to undefined.
   */
  const rowsSeen = deps.localWrites ? new Map<string, RuntimeRow | undefined>() : undefined;
  const logFileOf = (c: ContainerRow) => path.join(logDirOf(deps.stateDir, c), 'lxc.log');
  const lifecycle = (c: ContainerRow, action: string) =>
    emitLifecycle(deps.bus, { action, source: containerUrl(c), project: c.project });

  async function retire(c: ContainerRow, why: string) {
    const done = await retireEphemeralContainer(db, c);
    deps.log?.info(
      { container: c.name, project: c.project, deleting: done?.deleting ?? false },
      `ephemeral container ${why}`,
    );
    deps.report(CONTAINER_KIND, c.id, `ephemeral container ${why}`);
  }

  const stopped = createStopJudge({ ...deps, now, lifecycle, retire });
  const sampleRows = createSampleRows({ db, node: deps.node });
  const perTick = deps.perTick ?? 100;
  const slice = createRoundRobin(perTick);

  /** One container's look: write what changed to its runtime row, judge the transition, report drift. */
  async function look(
    c: ContainerRow,
    obs: { state: LxcState; pid?: number | undefined } | undefined,
    prev: RuntimeRow | undefined,
    t: number,
  ): Promise<void> {
    const state = obs?.state ?? 'STOPPED';
    const pid = state === 'STOPPED' ? 0 : (obs?.pid ?? 0);
    /** What this process saw at its last look (none yet: undefined), for a container without a runtime row. */
    const lastStable = memory.get(c.id)?.stable;
    if (!prev && state === 'STOPPED' && rowsSeen) {
      // A container never seen up has no row, which reads as stopped: nothing to write (known: no row).
      // Only on PGlite, where the only rows are this node's: on a shared database another member's row may exist.
      rowsSeen.set(c.id, undefined);
    } else if (!prev || prev.state !== state || prev.pid !== pid) {
      const startedAt = pid && pid !== prev?.pid ? new Date() : (prev?.startedAt ?? null);
      const values = { node: deps.node, state, pid, startedAt, observedAt: new Date() };
      rowsSeen?.delete(c.id);
      await recordContainerRuntime(db, c.id, values);
      rowsSeen?.set(c.id, { processes: 0, cpuNs: 0, memory: 0, ...prev, id: c.id, ...values });
    } else rowsSeen?.set(c.id, prev);

    const stable = stableOf(state);
    let m = memory.get(c.id);
    // First look by this process: a row from an earlier svcd only seeds what was seen; no row is a new container, seen stopped.
    const firstLook = !m && !!prev;
    if (!m) {
      m = {
        stable: prev ? stable : 'STOPPED',
        pid: prev ? pid : 0,
        upSince: t,
        logFile: logFileOf(c),
        restarting: false,
        crashes: 0,
      };
      memory.set(c.id, m);
    }
    const newInit = stable !== 'STOPPED' && pid !== 0 && pid !== m.pid;
    let handled = false;
    if (!firstLook && (stable !== m.stable || (newInit && m.stable !== 'STOPPED' && m.pid !== 0))) {
      if (stable === 'STOPPED') {
        handled = c.power !== 'stopped';
        await stopped(c.id, m);
      } else {
        const action = upTransitionAction(m.stable, stable, newInit, m.restarting);
        if (action) lifecycle(c, action);
        if (m.stable === 'STOPPED' || newInit)
          Object.assign(m, { restarting: false, rebootUntil: undefined, startAfter: undefined });
      }
    }
    if (newInit) Object.assign(m, { pid, upSince: t, logFile: logFileOf(c) });
    m.stable = stable;

    const wantUp = c.power !== 'stopped';
    if (stable === 'STOPPED' && wantUp && m.startAfter !== undefined && t >= m.startAfter) {
      m.startAfter = undefined;
      deps.report(CONTAINER_KIND, c.id, `observed STOPPED, desired ${c.power} (crash loop backoff over)`);
    }
    if (stable === 'STOPPED' && wantUp && m.rebootUntil !== undefined && t >= m.rebootUntil) {
      m.rebootUntil = undefined;
      deps.report(CONTAINER_KIND, c.id, `observed STOPPED, desired ${c.power} (not back from a reboot)`);
    }
    const waiting = m.startAfter !== undefined || m.rebootUntil !== undefined;
    const drifted =
      (wantUp && state === 'STOPPED') ||
      (!wantUp && state !== 'STOPPED') ||
      (c.power === 'frozen' && state === 'RUNNING') ||
      (c.power === 'running' && state === 'FROZEN');
    // Only report what changed since the last look, so a failing start is retried by the reconciler's backoff, not every tick.
    // A container without a row (never seen up) counts as changed at this process's first look, and when its
    // stable state moved since the last: a start that keeps failing is not retried every tick (at 1000, 386
    // containers whose start failed were started again every sample: 41% of a core).
    const changed = prev ? prev.state !== state : lastStable !== stable;
    if (drifted && !handled && !waiting && changed)
      deps.report(CONTAINER_KIND, c.id, `observed ${state}, desired ${c.power}`);
  }

  // Looks are serialized (they share `memory` and the runtime rows). A full sample lists every container
  // with one listing outside the lock; a container looked at on its own since that listing began is
  // skipped, so an older listing never overwrites a newer look.
  let lock: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = lock.then(fn, fn);
    lock = run.catch(() => undefined);
    return run;
  };
  let lookSeq = 0;
  const lookedAt = new Map<string, number>();
  const pending = new Set<string>();

  /** `row`: the container as the caller (its reconcile) has just read it, else read here. */
  async function observe(
    id: string,
    seen?: { state: LxcState; pid?: number | undefined },
    row?: ContainerRow,
  ): Promise<void> {
    if (!seen) {
      // a burst of events for one container needs one look
      if (pending.has(id)) return;
      pending.add(id);
    }
    // lxc-info outside the lock (a reconcile reporting meanwhile must not wait for it); a look that
    // came in while it ran is newer, and this one is then dropped.
    const since = lookSeq;
    let obs: { state: LxcState; pid?: number | undefined };
    try {
      obs = seen ?? (await deps.lxc.state({ name: id, lxcPath: deps.lxcPath }));
    } finally {
      if (!seen) pending.delete(id);
    }
    await exclusive(async () => {
      if (!seen && (lookedAt.get(id) ?? 0) > since) return;
      const c = row ?? (await readContainerById(db, id));
      if (!c || c.deletingAt) return;
      const prev = rowsSeen?.has(id)
        ? rowsSeen.get(id)
        : (await db.select().from(containerRuntime).where(eq(containerRuntime.id, id)).limit(1))[0];
      lookedAt.set(id, ++lookSeq);
      await look(c, obs, prev?.node === deps.node ? prev : undefined, now());
    });
  }

  return {
    name: 'containers',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 5_000,
    observe,
    onMonitorEvent(ev) {
      if (ev.type !== 'state') return;
      if (ev.state === 'STOPPED') return void observe(ev.name, { state: 'STOPPED' }).catch(() => {});
      if (ev.state !== 'RUNNING' && ev.state !== 'FROZEN') return;
      const m = memory.get(ev.name);
      if (m && m.stable === ev.state) return;
      // Most of these are svcd's own starts and freezes, whose reconcile reports the outcome a moment
      // later: look (one lxc-info) only if nothing has been seen of the container by then.
      const since = lookSeq;
      setTimeout(() => {
        if ((lookedAt.get(ev.name) ?? 0) > since) return;
        void observe(ev.name).catch(() => {});
      }, MONITOR_LOOK_DELAY_MS).unref();
    },
    async sample(signal) {
      const since = lookSeq;
      const { rows, runtime } = await sampleRows();
      // Every container while there are at most perTick; beyond, a round-robin slice of them and those whose
      // look cannot wait (not seen yet by this process, or a crash-loop backoff or reboot grace running).
      // lxc-monitor events bring the looks that matter at once; this sample is the safety net.
      const urgent = (c: ContainerRow) => {
        const m = memory.get(c.id);
        return !m || m.startAfter !== undefined || m.rebootUntil !== undefined;
      };
      const due = rows.length <= perTick ? rows : [...rows.filter(urgent), ...slice(rows.filter((c) => !urgent(c)))];
      const listing = await deps.lxc.list(
        deps.lxcPath,
        signal,
        due.map((c) => c.id),
      );
      await exclusive(async () => {
        const seen = new Map(listing.map((l) => [l.name, l]));
        const before = new Map(runtime.map((r) => [r.id, r]));
        const t = now();
        for (const c of due) {
          if ((lookedAt.get(c.id) ?? 0) > since) continue;
          await look(c, seen.get(c.id), before.get(c.id), t);
        }
        // Forget containers gone from the listing, but not one looked at since it began (created meanwhile).
        const live = new Set(rows.map((r) => r.id));
        const gone = (id: string) => !live.has(id) && (lookedAt.get(id) ?? 0) <= since;
        for (const id of memory.keys()) if (gone(id)) memory.delete(id);
        for (const id of rowsSeen?.keys() ?? []) if (gone(id)) rowsSeen!.delete(id);
        for (const id of lookedAt.keys()) if (gone(id)) lookedAt.delete(id);
      });
    },
  };
}
