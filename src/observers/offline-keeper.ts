/**
 * Containers kept converged while the database cannot be reached. Every reconcile reads its
 * container's row, so a member whose database went away (its server stopped, the cluster's serving member
 * down) could converge nothing: a container killed behind its back stayed down until the database came
 * back. The keeper remembers, for each container this process reconciled, the power state last desired
 * and the LXC config the reconcile wrote (ContainerReconcilerDeps.keeper), and keeps the host on it:
 *
 * - every `intervalMs` it reads the states of those containers (one spawn-free listing) and compares them
 *   with what was last desired;
 * - a disagreement is the reconcilers' while the database answers: only when one has lasted `graceMs`
 *   does the keeper ask the database (`probe`, at most every `graceMs`), and only when that fails is it
 *   in charge (offline). Then it asks the database at every look, so it knows when it is back;
 * - offline, a container desired up that is stopped is judged as the stop judge would (its LXC log):
 *   powered off from inside stays off (the observer records it once the database is back), rebooted gets
 *   LXC's grace, killed or crashed is started again from its config, at once the first time and then
 *   with the crash loop backoff. One desired stopped that runs is stopped; frozen and running are kept;
 * - back online, `onBack` runs (the agent's full resync), and the reconcilers converge everything again,
 *   what the keeper could not do included (proxies, live devices, writes of runtime rows and events).
 */
import type { ContainerRow } from '../desired/schema/index.ts';
import { stopCauseOf, type InitExit } from '../host/lxc/init-exit.ts';
import type { LxcState } from '../host/lxc/lxc-args.ts';
import type { ContainerFilesAdapter, LxcAdapter } from '../reconcilers/adapters.ts';
import type { ContainerKeeper, KeptFiles } from '../reconcilers/container/types.ts';
import { crashBackoffMs, SHORT_RUN_MS } from './container-transitions.ts';
import type { PollObserver } from './types.ts';

/** As the stop judge's: LXC starts a container rebooted from inside again by itself. */
const REBOOT_GRACE_MS = 30_000;

export interface OfflineKeeperDeps {
  lxc: Pick<LxcAdapter, 'list' | 'start' | 'stop' | 'freeze' | 'unfreeze'>;
  lxcPath: string;
  containerFiles: Pick<ContainerFilesAdapter, 'resetLog'>;
  initExit: { readInitExit(logFile: string, pid?: number): Promise<InitExit> };
  /** Whether the database answers (a short query with a deadline): false only when it cannot be reached. */
  probe(): Promise<boolean>;
  /** The database answers again after the keeper was in charge. */
  onBack(): void;
  log?: { info(o: object, m: string): void; warn(o: object, m: string): void } | undefined;
  now?: () => number;
  intervalMs?: number;
  graceMs?: number;
}

interface Kept {
  name: string;
  power: ContainerRow['power'];
  files?: KeptFiles;
  /** The last init seen up, and since when. */
  pid: number;
  upSince: number;
  /** The disagreement with `power` seen since (ms), none: undefined. */
  driftSince?: number | undefined;
  /** The stop of `pid` has been judged (once per stop). */
  judged: boolean;
  poweredOff: boolean;
  crashes: number;
  startAfter?: number | undefined;
}

export interface OfflineKeeper extends PollObserver, ContainerKeeper {
  /** The keeper is in charge: the database could not be reached at its last question. */
  readonly offline: boolean;
}

export function createOfflineKeeper(deps: OfflineKeeperDeps): OfflineKeeper {
  const now = deps.now ?? Date.now;
  const graceMs = deps.graceMs ?? 2_000;
  const kept = new Map<string, Kept>();
  const acting = new Set<string>();
  let offline = false;
  let probedAt = -Infinity;

  const wantsUp = (k: Kept) => k.power === 'running' || k.power === 'frozen';
  const agrees = (k: Kept, state: LxcState) =>
    k.power === 'stopped' ? state === 'STOPPED' : k.power === 'frozen' ? state === 'FROZEN' : state === 'RUNNING';

  /** What is done for one container, offline: at most one action under way per container. */
  async function act(id: string, k: Kept, state: LxcState, t: number): Promise<void> {
    const ref = { name: id, lxcPath: deps.lxcPath };
    const files = k.files!;
    if (wantsUp(k) && state === 'STOPPED') {
      if (k.poweredOff || (k.startAfter !== undefined && t < k.startAfter)) return;
      if (!k.judged && k.pid) {
        k.judged = true;
        const exit = await deps.initExit.readInitExit(files.logFile, k.pid).catch(() => ({ kind: 'unknown' }) as const);
        const cause = stopCauseOf(exit);
        if (cause === 'poweroff') {
          k.poweredOff = true;
          deps.log?.info({ container: k.name }, 'powered off from inside while the database is away: left off');
          return;
        }
        if (cause === 'reboot') {
          k.startAfter = t + REBOOT_GRACE_MS;
          return;
        }
        k.crashes = t - k.upSince < SHORT_RUN_MS ? k.crashes + 1 : 1;
        const delay = crashBackoffMs(k.crashes);
        if (delay > 0) {
          k.startAfter = t + delay;
          deps.log?.warn(
            { container: k.name, cause, restartInMs: delay },
            'container stopped while the database is away',
          );
          return;
        }
      }
      deps.log?.warn({ container: k.name }, 'starting a container while the database is away (its last desired state)');
      k.startAfter = undefined;
      await deps.containerFiles.resetLog(files.consoleLogFile);
      const up = await deps.lxc.start({
        ...ref,
        configFile: files.configFile,
        logFile: files.logFile,
        knownStopped: true,
      });
      Object.assign(k, { pid: up.pid, upSince: now(), judged: false });
      if (k.power === 'frozen') await deps.lxc.freeze(ref);
      return;
    }
    if (k.power === 'stopped' && state !== 'STOPPED') {
      deps.log?.warn({ container: k.name }, 'stopping a container while the database is away (its last desired state)');
      return void (await deps.lxc.stop({ ...ref, timeoutMs: 30_000 }));
    }
    if (k.power === 'frozen' && state === 'RUNNING') return deps.lxc.freeze(ref);
    if (k.power === 'running' && state === 'FROZEN') return deps.lxc.unfreeze(ref);
  }

  async function probe(t: number): Promise<void> {
    probedAt = t;
    const reachable = await deps.probe().catch(() => false);
    if (reachable === !offline) return;
    offline = !reachable;
    if (offline)
      deps.log?.warn(
        { containers: kept.size },
        'the database cannot be reached: keeping containers on their last desired state',
      );
    else {
      deps.log?.info({}, 'the database answers again: reconciling everything');
      deps.onBack();
    }
  }

  async function sample(): Promise<void> {
    const ids = [...kept.keys()].filter((id) => kept.get(id)!.files);
    if (!ids.length && !offline) return;
    const states = new Map((await deps.lxc.list(deps.lxcPath, undefined, ids)).map((s) => [s.name, s]));
    const t = now();
    let overdue = false;
    for (const id of ids) {
      const k = kept.get(id)!;
      const s = states.get(id);
      const state = s?.state ?? 'STOPPED';
      if (state !== 'STOPPED' && s?.pid && s.pid !== k.pid) Object.assign(k, { pid: s.pid, upSince: t, judged: false });
      if (agrees(k, state)) k.driftSince = undefined;
      else k.driftSince ??= t;
      if (k.driftSince !== undefined && t - k.driftSince >= graceMs) overdue = true;
    }
    if (offline || (overdue && t - probedAt >= graceMs)) await probe(t);
    if (!offline) return;
    for (const id of ids) {
      const k = kept.get(id)!;
      if (k.driftSince === undefined || acting.has(id)) continue;
      acting.add(id);
      void act(id, k, states.get(id)?.state ?? 'STOPPED', t)
        .catch((err: unknown) => {
          k.startAfter = now() + crashBackoffMs(Math.max(2, ++k.crashes));
          deps.log?.warn({ err, container: k.name }, 'cannot converge a container while the database is away');
        })
        .finally(() => acting.delete(id));
    }
  }

  return {
    name: 'offline-keeper',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 1_000,
    sample,
    get offline() {
      return offline;
    },
    remember(c, files) {
      const k = kept.get(c.id);
      if (!k) {
        kept.set(c.id, {
          name: c.name,
          power: c.power,
          ...(files ? { files } : {}),
          pid: 0,
          upSince: now(),
          judged: true,
          poweredOff: false,
          crashes: 0,
        });
        return;
      }
      if (k.power !== c.power) Object.assign(k, { poweredOff: false, crashes: 0, startAfter: undefined });
      k.name = c.name;
      k.power = c.power;
      if (files) k.files = files;
    },
    forget(id) {
      kept.delete(id);
    },
  };
}
