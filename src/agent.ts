import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { createApp } from './api/app.ts';
import type { AppEnv } from './api/context.ts';
import { createListeners } from './api/listeners.ts';
import { createTrustStore } from './api/trust-store.ts';
import type { DaemonConfig } from './config/daemon-config.ts';
import { openDatabase } from './db/open-database.ts';
import type { Database } from './db/types.ts';
import { ensureDefaultProject } from './desired/projects.ts';
import { ensureDefaultPool } from './desired/storage-pools.ts';
import { ValidationError } from './desired/errors.ts';
import { createStorageDrivers } from './host/storage/registry.ts';
import { probeProjectQuota } from './host/storage/dir.ts';
import { createPoolObserver } from './observers/pool-observer.ts';
import { createConvergence } from './reconcilers/convergence.ts';
import { createPoolReconciler } from './reconcilers/storage-pool/reconcile.ts';
import { createVolumeReconciler } from './reconcilers/storage-volume/reconcile.ts';
import { readServerKeys } from './desired/server-config.ts';
import { createEventBus, type EventBus } from './events/index.ts';
import { readHostInfo } from './host/host-info.ts';
import { createResourcesCache } from './host/resources/index.ts';
import { createLogger } from './log.ts';
import { createDriftReporter, createObserverRunner } from './observers/index.ts';
import { createOperations, type Operations } from './operations/index.ts';
import { createReconcileManager, systemClock, type Clock, type ReconcileManager, type Reconciler } from './reconcilers/runtime/index.ts';
import { createStatusSettler } from './reconcilers/status-settler.ts';
import { ensureServerCertificate } from './tls/ensure-server-certificate.ts';

export interface Agent {
  config: DaemonConfig;
  app: Hono<AppEnv>;
  database: Database;
  bus: EventBus;
  ops: Operations;
  log: Logger;
  reconcile: ReconcileManager;
  socketPath: string;
  stop(): Promise<void>;
}

export interface AgentOptions {
  clock?: Clock;
  logDestination?: NodeJS.WritableStream;
  /** Reconcilers for each kind of desired state (storage, containers... arrive with their issues). */
  reconcilers?: Reconciler[];
  /** Events websocket ping interval (tests shorten it). */
  pingMs?: number;
  /** Pool observer period (tests shorten it). */
  poolObserveMs?: number;
  /** Operation deadlines and sweep period (tests shorten them). */
  operations?: { defaultDeadlineMs?: number; sweepIntervalMs?: number };
}

/** The composition root: wires store, operations, reconcilers, observers and the API. Tests use it too. */
export async function createAgent(config: DaemonConfig, opts: AgentOptions = {}): Promise<Agent> {
  const clock = opts.clock ?? systemClock;
  await mkdir(config.stateDir, { recursive: true, mode: 0o711 });
  const bus = createEventBus({ location: config.nodeName });
  const log = createLogger({ level: config.logLevel, bus, ...(opts.logDestination ? { destination: opts.logDestination } : {}) });
  const database = await openDatabase({ stateDir: config.stateDir, databaseUrl: config.databaseUrl });
  const { db } = database;
  if (await ensureDefaultProject(db)) await ensureDefaultPool(db, config.stateDir);
  const [serverCert, host] = await Promise.all([ensureServerCertificate(config.stateDir), readHostInfo()]);

  const ops = createOperations({ db, bus, clock, node: config.nodeName, log: log.child({ component: 'operations' }), ...opts.operations });
  const orphaned = await ops.recover();
  if (orphaned) log.warn({ count: orphaned }, 'operations left running by a previous svcd ended as Failure');
  ops.start();

  const storage = createStorageDrivers();
  const convergence = createConvergence({ db });
  const observers = createObserverRunner({ clock, log: log.child({ component: 'observers' }) });
  const reconcilers: Reconciler[] = [
    createPoolReconciler({ db, node: config.nodeName, stateDir: config.stateDir, driverFor: storage.driverFor, onHostChange: () => observers.runNow('storage-pools').catch(() => {}) }),
    createVolumeReconciler({ db, stateDir: config.stateDir, driverFor: storage.driverFor }),
    ...(opts.reconcilers ?? []),
  ];
  const reconcile = createReconcileManager({
    clock,
    reconcilers,
    settler: createStatusSettler({ db, ops, convergence }),
    log: log.child({ component: 'reconcile' }),
  });
  const drift = createDriftReporter({ enqueue: (kind, key, reason) => reconcile.enqueue(kind, key, reason) });
  observers.register(createPoolObserver({ db, node: config.nodeName, stateDir: config.stateDir, driverFor: storage.driverFor, report: drift.report, ...(opts.poolObserveMs ? { intervalMs: opts.poolObserveMs } : {}) }));

  const trust = createTrustStore({ db });
  const resources = createResourcesCache({ ttlMs: 1_000 });
  let listeners: ReturnType<typeof createListeners> | undefined;
  const app = createApp({
    db,
    node: config.nodeName,
    ops,
    bus,
    trust,
    log,
    host,
    serverCertificate: serverCert,
    resources,
    reconcile,
    convergence,
    stateDir: config.stateDir,
    storage: {
      driverFor: storage.driverFor,
      async checkVolumeQuota(pool) {
        if (pool.driver !== 'dir') return;
        const probe = await probeProjectQuota(storage.driverFor('dir').poolPath({ name: pool.name, driver: pool.driver, config: pool.config, stateDir: config.stateDir }));
        if (!probe.ok) throw new ValidationError(`Volume size limits are not available on dir pool "${pool.name}": ${probe.reason}`);
      },
    },
    listeners: {
      setHttpsAddress: (a) => listeners!.setHttpsAddress(a),
      addresses: () => listeners?.addresses() ?? [],
    },
  });
  listeners = createListeners({ app, db, bus, ops, trust, log: log.child({ component: 'api' }), tls: serverCert, ...(opts.pingMs ? { pingMs: opts.pingMs } : {}) });
  const socketPath = path.join(config.stateDir, 'unix.socket');
  try {
    await listeners.listenUnix(socketPath);
    const { 'core.https_address': https } = await readServerKeys(db, config.nodeName, ['core.https_address']);
    if (https) await listeners.setHttpsAddress(https).catch((e: unknown) => log.error({ err: e, address: https }, 'cannot open the HTTPS listener'));
    observers.start();
    await reconcile.start();
  } catch (e) {
    await listeners.close().catch(() => {});
    ops.stop();
    await database.close().catch(() => {});
    throw e;
  }
  log.info({ stateDir: config.stateDir, socket: socketPath, database: database.driver, node: config.nodeName }, 'svcd started');

  return {
    config,
    app,
    database,
    bus,
    ops,
    log,
    reconcile,
    socketPath,
    async stop() {
      log.info('svcd stopping');
      await listeners!.close();
      await observers.stop();
      await reconcile.stop();
      ops.stop();
      await database.close();
    },
  };
}
