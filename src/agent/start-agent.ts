/**
 * The agent's start, once wired: one look at every container, the observers, the boot order, the reconcile
 * manager by tiers, then the listeners; and its two stops (svcd's own, and the host's shutdown).
 */
import os from 'node:os';
import type { Logger } from 'pino';
import type { createDebugListener } from '../api/debug/debug-listener.ts';
import { assertUnixFree, type createListeners } from '../api/listeners.ts';
import type { DaemonConfig } from '../config/daemon-config.ts';
import { CONTAINER_KIND } from '../desired/containers.ts';
import { readServerKeys } from '../desired/server-config.ts';
import type { Devsvc } from '../devsvc/create-devsvc.ts';
import type { createLxcAdapter } from '../host/lxc/lxc-adapter.ts';
import type { createContainerObserver } from '../observers/container-observer.ts';
import type { createObserverRunner } from '../observers/index.ts';
import { planContainerBoot, shutdownContainers } from '../reconcilers/container/boot.ts';
import { type BootGate, createBootSequencer } from '../reconcilers/container/boot-sequencer.ts';
import type { Convergence } from '../reconcilers/convergence.ts';
import type { ReconcileManager } from '../reconcilers/runtime/index.ts';
import type { AgentStore } from './open-agent-store.ts';

export interface RunningParts {
  config: DaemonConfig;
  store: AgentStore;
  lxc: ReturnType<typeof createLxcAdapter>;
  lxcPath: string;
  socketPath: string;
  bootGate: BootGate;
  containerObserver: ReturnType<typeof createContainerObserver>;
  observers: ReturnType<typeof createObserverRunner>;
  reconcile: ReconcileManager;
  convergence: Convergence;
  listeners: ReturnType<typeof createListeners>;
  debugListener: ReturnType<typeof createDebugListener>;
  devsvc: Devsvc;
  hotplug: { close(): void };
  migrations: { sweep(): Promise<number> };
  /** Cluster members' events relayed here, and pools and networks written through other members queued here. */
  eventRelay: { start(): void; stop(): void };
  sharedKinds: { start(): void; stop(): void };
}

export async function startAgent(p: RunningParts, how: { handover?: boolean } = {}): Promise<void> {
  const { config, store, lxc, lxcPath, socketPath, bootGate, containerObserver, observers, reconcile } = p;
  const { convergence, listeners, debugListener, devsvc } = p;
  const { db, log, ops, database, dbServer } = store;
  try {
    // Before anything touches the host: another svcd serving this state directory refuses this one (a
    // restarted agent serves it already, in the same listeners).
    if (!how.handover) await assertUnixFree(socketPath);
    // One look at every container before the API answers: its runtime rows are then what the host shows now,
    // not what they were when svcd last stopped (a host reboot, a kill -9, a container stopped meanwhile).
    await containerObserver
      .sample(AbortSignal.timeout(60_000))
      .catch((e: unknown) => log.warn({ err: e }, 'cannot look at the containers before answering; the observer will'));
    observers.start();
    const plan = await planContainerBoot({ db, node: config.nodeName, lxcPath, lxc }).catch((e: unknown) => {
      log.error({ err: e }, 'cannot plan the container boot order; starting containers without it');
      return { setPower: [], order: [] as { id: string; priority: number; delayMs: number; generation: number }[] };
    });
    const generations = new Map(plan.order.map((o) => [o.id, o.generation]));
    const boot = createBootSequencer({
      order: plan.order,
      // lxc-start is the host's work (forks, mounts, cgroups): as many at once as it has cores.
      concurrency: Math.max(2, os.availableParallelism()),
      enqueue: (id) => reconcile.enqueue(CONTAINER_KIND, id, 'boot'),
      // Watched from before the sequencer queues it (no read of its status: nothing of it converges before).
      waitSettled: async (id) => {
        const watch = convergence.watch(CONTAINER_KIND, id);
        try {
          return (await watch.until(generations.get(id)!, { timeoutMs: 120_000 })).ok;
        } finally {
          watch.close();
        }
      },
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    });
    bootGate.mayStart = boot.mayStart;
    bootGate.start = boot.start;
    // Released now, its first wave is queued with the containers' startup tier (after the pools and networks),
    // so each of its containers is reconciled once, with its start, while the API comes up.
    void boot
      .run()
      .catch((e: unknown) =>
        log.error({ err: e }, 'the boot order stopped short; the containers it held are queued now'),
      );
    // The start reconciles pools and networks first (their startup tier), every one once on this boot, before
    // anything that uses them is queued: a client's first look never finds its pool Pending or not mounted, and
    // a container's first DHCP request finds its network's dnsmasq serving. It waits at most 10 s for them.
    await reconcile.start();
    // Only now do the pools' and networks' observers look (before, they would find what the startup tier sets up),
    // and the API answers with what they found (a look that hangs, on a pool's stuck source, waits 2 s at most).
    await Promise.race([observers.startupDone(), new Promise((r) => setTimeout(r, 2_000).unref())]);
    // What a transfer killed midway left on the pools (no row was ever committed for it) goes now.
    await p.migrations
      .sweep()
      .then((n) => n > 0 && log.warn({ count: n }, 'removed the volumes of migrations that never completed'))
      .catch((e: unknown) => log.error({ err: e }, 'cannot sweep the volumes of failed migrations'));
    await listeners.listenUnix(socketPath);
    const { 'core.https_address': https, 'core.debug_address': debug } = await readServerKeys(db, config.nodeName, [
      'core.https_address',
      'core.debug_address',
    ]);
    if (https)
      await listeners
        .setHttpsAddress(https)
        .catch((e: unknown) => log.error({ err: e, address: https }, 'cannot open the HTTPS listener'));
    if (debug)
      await debugListener
        .setAddress(debug)
        .catch((e: unknown) => log.error({ err: e, address: debug }, 'cannot open the debug listener'));
    p.eventRelay.start();
    p.sharedKinds.start();
  } catch (e) {
    await listeners.close().catch(() => {});
    await debugListener.close().catch(() => {});
    await observers.stop().catch(() => {});
    await reconcile.stop().catch(() => {});
    await devsvc.close().catch(() => {});
    await ops.stop();
    store.member.stop();
    await database.close().catch(() => {});
    dbServer?.close();
    throw e;
  }
  log.info(
    {
      stateDir: config.stateDir,
      socket: socketPath,
      database: dbServer ? 'postgres (embedded server)' : database.driver,
      node: config.nodeName,
    },
    'svcd started',
  );
}

/** svcd's own stop (containers keep running), or with `host` a host shutdown: containers stopped by boot.stop.priority first. */
export async function stopAgent(
  p: RunningParts,
  host: boolean,
  restart: { keepListeners?: boolean; stopDatabaseServer?: boolean | undefined } = {},
): Promise<void> {
  const { store, lxc, lxcPath, observers, reconcile, listeners, debugListener, devsvc, hotplug } = p;
  const { db, log, ops, database, dbServer } = store;
  if (host) {
    // A host shutdown: nothing may start containers again while they are being stopped.
    log.info('host shutdown: stopping containers');
  } else log.info('svcd stopping');
  p.eventRelay.stop();
  p.sharedKinds.stop();
  if (!restart.keepListeners) await listeners.close();
  await debugListener.close();
  await observers.stop();
  hotplug.close();
  await reconcile.stop();
  await devsvc.close();
  if (host) await shutdownContainers({ db, node: p.config.nodeName, lxcPath, lxc, log: log as Logger });
  await ops.stop();
  store.member.stop();
  await database.close();
  // The embedded server keeps running after svcd's own stop: the next svcd adopts it (as systemd's
  // KillMode=process leaves it); a host shutdown stops it.
  if (host || restart.stopDatabaseServer) await dbServer?.stop();
  else dbServer?.close();
}
