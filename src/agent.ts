import { readFile, mkdir } from 'node:fs/promises';
import { CONTAINER_KIND } from './desired/containers.ts';
import type { DaemonConfig } from './config/daemon-config.ts';
import { createDevsvc } from './devsvc/create-devsvc.ts';
import { watchDevicePaths } from './host/devices/watch-device-paths.ts';
import { parseSubids } from './host/idmap/parse-subids.ts';
import { lxcPathOf, stateTrashOf, unixSocketOf } from './host/layout.ts';
import { readLxcHostFeatures } from './host/lxc/host-features.ts';
import { createLxcAdapter } from './host/lxc/lxc-adapter.ts';
import { createInitExitAdapter } from './host/lxc/observer-adapters.ts';
import { createStorageDrivers } from './host/storage/registry.ts';
import { createTrash } from './host/storage/trash.ts';
import { createContainerObserver } from './observers/container-observer.ts';
import { createOfflineKeeper } from './observers/offline-keeper.ts';
import { createContainerFilesAdapter } from './host/lxc/container-files-adapter.ts';
import { probeDatabase } from './agent/database-probe.ts';
import { createDriftReporter, createObserverRunner } from './observers/index.ts';
import { createLiveRegistry } from './reconcilers/container/ensure-live.ts';
import { createConvergence } from './reconcilers/convergence.ts';
import { buildApi } from './agent/build-api.ts';
import { buildReconcilers } from './agent/build-reconcilers.ts';
import { createAgentReconcileManager } from './agent/create-agent-reconcile-manager.ts';
import { openAgentStore } from './agent/open-agent-store.ts';
import { registerObservers } from './agent/register-observers.ts';
import { type RunningParts, startAgent, stopAgent } from './agent/start-agent.ts';
import type { Agent, AgentOptions, AgentRestart } from './agent/types.ts';
import type { Listeners } from './api/listeners.ts';
import type { BootGate } from './reconcilers/container/boot-sequencer.ts';

export type { Agent, AgentOptions } from './agent/types.ts';

/**
 * The composition root: wires store, operations, reconcilers, observers and the API (each built in
 * src/agent/), and every piece of per-agent state. Tests use it too.
 */
export async function createAgent(config: DaemonConfig, opts: AgentOptions = {}): Promise<Agent> {
  let current: Built;
  let restarting: Promise<unknown> = Promise.resolve();
  /**
   * Replace the agent by a new one inside the same listeners (requests wait meanwhile, none is refused): when
   * what the agent is built on changes, as the database does when this daemon joins a cluster. `prepare` runs
   * between the old agent's stop and the new one's start; `undo` when the new one cannot start, after which
   * the agent starts again as it was.
   */
  const restart: AgentRestart = (reason, steps = {}) => {
    // From this call on, requests wait for the new agent (the caller's own answer is already being made).
    current.parts.listeners.pause();
    const run = restarting.then(async () => {
      const old = current;
      old.store.log.info({ reason }, 'restarting the agent');
      await stopAgent(old.parts, false, { keepListeners: true, stopDatabaseServer: steps.stopDatabaseServer });
      await steps.prepare?.();
      try {
        current = await buildAgent(config, opts, old.parts.listeners, restart);
      } catch (e) {
        old.store.log.error({ err: e, reason }, 'the restarted agent did not start; starting it as it was');
        await steps.undo?.();
        current = await buildAgent(config, opts, old.parts.listeners, restart);
        throw e;
      }
      return { ops: current.store.ops };
    });
    restarting = run.catch(() => {});
    return run;
  };
  current = await buildAgent(config, opts, undefined, restart);
  return {
    config,
    get app() {
      return current.api.app;
    },
    get database() {
      return current.store.database;
    },
    get bus() {
      return current.store.bus;
    },
    get ops() {
      return current.store.ops;
    },
    get log() {
      return current.store.log;
    },
    get reconcile() {
      return current.parts.reconcile;
    },
    socketPath: unixSocketOf(config.stateDir),
    shutdownHost: () => restarting.then(() => stopAgent(current.parts, true)),
    stop: () => restarting.then(() => stopAgent(current.parts, false)),
  };
}

type Built = Awaited<ReturnType<typeof buildAgent>>;

async function buildAgent(
  config: DaemonConfig,
  opts: AgentOptions,
  handover: Listeners | undefined,
  restart: AgentRestart,
) {
  const store = await openAgentStore(config, opts);
  const { clock, bus, log, database, db, recorded, ops } = store;

  const storage = createStorageDrivers();
  const lxc = createLxcAdapter();
  const lxcPath = lxcPathOf(config.stateDir);
  /** Until the boot sequencer runs, no container is powered up by the startup sweep. */
  const bootGate: BootGate = { mayStart: () => false, start: (_id, run) => run() };
  const lxcFeatures = await readLxcHostFeatures();
  const subids = {
    subuid: parseSubids(await readFile('/etc/subuid', 'utf8').catch(() => '')),
    subgid: parseSubids(await readFile('/etc/subgid', 'utf8').catch(() => '')),
  };
  await mkdir(lxcPath, { recursive: true, mode: 0o711 });
  // A removed container's directories are renamed into the state dir's trash and removed in the background;
  // what a crash left there goes now, in the background too.
  const trash = createTrash({
    onError: (err, dir) => log.warn({ err, dir }, 'cannot empty the trash (tried again at the next removal)'),
  });
  trash.sweep(stateTrashOf(config.stateDir)).catch((err: unknown) => log.warn({ err }, 'cannot empty the trash'));
  const convergence = createConvergence({ db, node: config.nodeName });
  const observers = createObserverRunner({ clock, log: log.child({ component: 'observers' }) });
  // Reconcilers tell this observer what they left each container as; its drift reports go to the reconcile manager below.
  const containerObserver = createContainerObserver({
    db: recorded,
    localWrites: database.localWrites,
    lxc,
    node: config.nodeName,
    lxcPath: lxcPathOf(config.stateDir),
    initExit: createInitExitAdapter(),
    stateDir: config.stateDir,
    bus,
    log: log.child({ component: 'observers', observer: 'containers' }),
    // A container the boot holds for its wave is the boot sequencer's to queue (it is stopped until then).
    report: (kind, key, what) => {
      if (kind !== CONTAINER_KIND || bootGate.mayStart(key)) drift.report(kind, key, what);
    },
    reportAfter: (kind, key, delayMs, what) => drift.reportAfter(kind, key, delayMs, what),
    ...(opts.containerObserveMs ? { intervalMs: opts.containerObserveMs } : {}),
  });
  // Hotplug: a container's optional unix device nodes are watched on the host (inotify); a change reconciles it.
  const hotplug = watchDevicePaths({
    onChange: (id, node) => drift.report(CONTAINER_KIND, id, `device node ${node} appeared or went`),
  });
  const live = createLiveRegistry({ onChange: (id, e) => hotplug.watch(id, e?.hotplug ?? []) });
  const devsvc = createDevsvc({
    db,
    stateDir: config.stateDir,
    node: config.nodeName,
    bus,
    log,
    trash,
    ...(opts.pingMs ? { pingMs: opts.pingMs } : {}),
  });
  // While the database cannot be reached, containers are kept on what was last desired (observers/offline-keeper.ts).
  const keeper = createOfflineKeeper({
    lxc,
    lxcPath,
    containerFiles: createContainerFilesAdapter(),
    initExit: createInitExitAdapter(),
    probe: () => probeDatabase(db),
    onBack: () => void reconcile.resync('the database answers again').catch(() => undefined),
    log: log.child({ component: 'observers', observer: 'offline-keeper' }),
  });
  observers.register(keeper);
  /** Set once the API's cluster service exists (below): image files fetched from other members. */
  let memberImages: Awaited<ReturnType<typeof buildApi>>['memberImages'] | undefined;
  const { reconcilers, network, proxy } = buildReconcilers({
    memberImages: () => memberImages,
    config,
    opts,
    db,
    recorded,
    clock,
    log,
    bus,
    storage,
    lxc,
    lxcFeatures,
    subids,
    trash,
    live,
    devsvc,
    bootGate,
    enqueue: (kind, key, reason) => reconcile.enqueue(kind, key, reason),
    onPoolChange: () => observers.runNow('storage-pools').catch(() => {}),
    observeContainer: (id, seen, row) => containerObserver.observe(id, seen, row).catch(() => {}),
    keeper,
  });
  const reconcile = createAgentReconcileManager({
    clock,
    reconcilers,
    db,
    recorded,
    ops,
    convergence,
    log,
    node: config.nodeName,
    heldForBoot: (id) => !bootGate.mayStart(id),
  });
  const drift = createDriftReporter({
    enqueue: (kind, key, reason) => reconcile.enqueue(kind, key, reason),
    enqueueAfter: (kind, key, delayMs, reason) => reconcile.enqueueAfter(kind, key, delayMs, reason),
  });
  registerObservers({ config, opts, recorded, observers, containerObserver, drift, live, network, proxy, storage });
  const api = await buildApi({
    config,
    opts,
    handover,
    restart,
    store,
    reconcile,
    convergence,
    observers,
    live,
    storage,
  });
  const { listeners, debugListener, migrations, eventRelay, sharedKinds } = api;
  memberImages = api.memberImages;
  const socketPath = unixSocketOf(config.stateDir);
  const parts: RunningParts = {
    config,
    store,
    lxc,
    lxcPath,
    socketPath,
    bootGate,
    containerObserver,
    observers,
    reconcile,
    convergence,
    listeners,
    debugListener,
    migrations,
    eventRelay,
    sharedKinds,
    devsvc,
    hotplug,
  };
  await startAgent(parts, { handover: !!handover });
  return { parts, store, api };
}
