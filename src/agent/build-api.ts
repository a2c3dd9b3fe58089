/** The API: its host services (images, networks, container files), the hono app, and its listeners. */
import type { DaemonConfig } from '../config/daemon-config.ts';
import { createApp } from '../api/app.ts';
import { createDebugListener } from '../api/debug/debug-listener.ts';
import { createImagePulls } from '../api/image-pulls.ts';
import { createListeners, type ListenerDeps, type Listeners } from '../api/listeners.ts';
import { createDatabaseTunnelEndpoint } from '../cluster/database-tunnel-endpoint.ts';
import { createTrustStore } from '../api/trust-store.ts';
import { createClusterService } from '../cluster/cluster-service.ts';
import { createEventRelay } from '../cluster/event-relay.ts';
import { createEventJournal, MEMBER_EVENTS_PATH } from '../cluster/event-journal.ts';
import { createUpgradeForwarder } from '../cluster/forward-upgrade.ts';
import { createMemberImages } from '../cluster/member-images.ts';
import { createContainerMover } from '../cluster/move-container.ts';
import { createSharedKindsWatch } from '../cluster/shared-kinds-watch.ts';
import { createMigrations } from '../migration/create-migrations.ts';
import { createLeavingMarks } from '../migration/leaving-marks.ts';
import { createUiAssets } from '../ui/ui-assets.ts';
import { createUiSessions } from '../ui/ui-sessions.ts';
import { createOwnVacuum } from '../db/own-vacuum.ts';
import { readContainerWithPool } from '../desired/container-pools.ts';
import { ValidationError } from '../desired/errors.ts';
import { createContainerHost } from '../host/container-host/create-container-host.ts';
import { readSriov } from '../host/devices/read-sriov.ts';
import { createImageHost } from '../host/image-host/create-image-host.ts';
import { createImageStore } from '../host/images/create-image-store.ts';
import { createRemoteImages } from '../host/images/remote/download-remote-image.ts';
import { createProtocolRegistry } from '../host/images/remote/protocol-registry.ts';
import { createSimplestreamsProtocol } from '../host/images/remote/simplestreams-protocol.ts';
import { createSvcProtocol } from '../host/images/remote/svc-protocol.ts';
import { createContainerStatsAdapter } from '../host/lxc/observer-adapters.ts';
import { createNetworkHost } from '../host/network/network-host.ts';
import { probeListen } from '../host/proxy/bound-sockets.ts';
import { createResourcesCache } from '../host/resources/index.ts';
import { probeProjectQuota } from '../host/storage/dir.ts';
import { probeDriver, type StorageDrivers } from '../host/storage/registry.ts';
import { readContainerState } from '../observers/container-state.ts';
import { createImageCacheObserver } from '../observers/image-cache-observer.ts';
import type { createObserverRunner } from '../observers/index.ts';
import type { LiveRegistry } from '../reconcilers/container/ensure-live.ts';
import type { Convergence } from '../reconcilers/convergence.ts';
import type { ReconcileManager } from '../reconcilers/runtime/index.ts';
import type { AgentStore } from './open-agent-store.ts';
import type { AgentOptions, AgentRestart } from './types.ts';

export async function buildApi(input: {
  config: DaemonConfig;
  opts: AgentOptions;
  /** The listeners of the agent this one replaces (a restart): served by this agent from its start on. */
  handover?: Listeners | undefined;
  restart: AgentRestart;
  store: AgentStore;
  reconcile: ReconcileManager;
  convergence: Convergence;
  observers: ReturnType<typeof createObserverRunner>;
  live: LiveRegistry;
  storage: StorageDrivers;
}) {
  const { config, opts, store, reconcile, convergence, observers, live, storage, restart } = input;
  const { db, recorded, database, pki, log, serverCert, host, ops, bus } = store;
  // A running container's usage for the state route (observers/adapters.ts).
  const containerStats = createContainerStatsAdapter();
  const trust = createTrustStore({ db, pki: !!pki });
  // What the HTTPS listener presents: the server certificate, or the cluster's once this member is clustered.
  const serving = { ...serverCert };
  const cluster = createClusterService({
    db,
    node: config.nodeName,
    stateDir: config.stateDir,
    serving,
    setCertificate: (c) => listeners!.setCertificate(c),
    restart,
    databaseServed: !!store.dbServer && !config.databaseUrl,
    onMemberRemoved: () => sharedKinds.requeueDeleting(),
  });
  await cluster.init();
  const resources = createResourcesCache({ ttlMs: 1_000 });
  const imageStore = createImageStore({ stateDir: config.stateDir });
  // What this member emitted lately, replayed to a member that reconnects (cluster/event-journal.ts).
  const journal = createEventJournal({ bus, node: config.nodeName });
  const eventRelay = createEventRelay({
    node: config.nodeName,
    cluster,
    bus,
    log: log.child({ component: 'cluster' }),
  });
  // A client waiting on this member's events for an operation forwarded to another sees it end.
  cluster.beforeForward = (m) => eventRelay.ensure(m);
  const sharedKinds = createSharedKindsWatch({
    db,
    clustered: () => !!cluster.certificate(),
    enqueue: (kind, key, reason) => reconcile.enqueue(kind, key, reason),
    log: log.child({ component: 'cluster' }),
  });
  const memberImages = createMemberImages({
    node: config.nodeName,
    cluster,
    store: imageStore,
    architectures: host.architectures,
    log: log.child({ component: 'cluster' }),
  });
  // Made after the app, which names it in its settings' callbacks.
  let listeners: Listeners | undefined;
  const debugListener = createDebugListener({ log: log.child({ component: 'debug' }) });
  const networkHost = createNetworkHost({});
  // The protocols a pull can use, by the name a source gives (src/api/remote-source.ts maps `lxd` to svc).
  const protocols = createProtocolRegistry({
    svc: createSvcProtocol({ clientCert: { cert: serverCert.cert, key: serverCert.key } }),
    simplestreams: createSimplestreamsProtocol(),
  });
  const imageHost = createImageHost({
    store: imageStore,
    remote: createRemoteImages({ protocols, store: imageStore, architectures: host.architectures }),
  });
  const imagePulls = createImagePulls({ db, images: imageHost, reconcile, log: log.child({ component: 'images' }) });
  // The embedded databases are vacuumed by svcd (no autovacuum launcher: own-vacuum.ts).
  if (database.localWrites)
    observers.register(
      createOwnVacuum({ db, localWrites: database.localWrites, log: log.child({ component: 'database' }) }).observer,
    );
  observers.register(
    createImageCacheObserver({
      db: recorded,
      node: config.nodeName,
      images: imagePulls,
      log: log.child({ component: 'images' }),
    }),
  );
  const migrations = createMigrations({
    db,
    node: config.nodeName,
    ops,
    log: log.child({ component: 'migration' }),
    stateDir: config.stateDir,
    storage,
    reconcile,
    convergence,
    leaving: createLeavingMarks(config.stateDir),
  });
  const moves = createContainerMover({
    db,
    node: config.nodeName,
    ops,
    log: log.child({ component: 'cluster' }),
    cluster,
    migration: migrations,
    leaving: createLeavingMarks(config.stateDir),
    reconcile,
  });
  const uiSessions = createUiSessions({ db });
  const app = createApp({
    migration: migrations,
    moves,
    ui: { sessions: uiSessions, assets: createUiAssets() },
    db,
    node: config.nodeName,
    ops,
    bus,
    trust,
    log,
    host,
    serverCertificate: serving,
    cluster,
    resources,
    reconcile,
    convergence,
    stateDir: config.stateDir,
    containers: {
      // What waits for the next start is part of the state: a config change never looks applied when it is not.
      state: async (row, rt) => ({
        // Another member's container: what the database knows (its host's counters are not read here).
        ...(await readContainerState(
          containerStats,
          row,
          rt && row.location !== config.nodeName ? { ...rt, pid: 0 } : rt,
        )),
        pending_restart: rt && rt.state !== 'STOPPED' ? (live.get(row.id)?.pendingRestart ?? []) : [],
      }),
      // The network host's probe (cached per process): one answer for networks and container nics.
      probeNic: async (feature) => {
        const r = await networkHost.probe(feature);
        return r.ok ? { ok: true } : { ok: false, missing: r.missing.join('; ') };
      },
      listenProbe: probeListen,
      nicHost: { interfaces: () => networkHost.interfaces(), sriov: (parent) => readSriov(parent) },
    },
    containerHost: createContainerHost({
      db,
      stateDir: config.stateDir,
      node: config.nodeName,
      driverFor: storage.driverFor,
      images: imageStore,
      readContainerWithPool,
    }),
    images: imageHost,
    imagePulls,
    networks: networkHost,
    storage: {
      probeDriver: (name) => probeDriver(name),
      async checkVolumeQuota(pool) {
        if (pool.driver !== 'dir') return;
        const probe = await probeProjectQuota(
          storage
            .driverFor('dir')
            .poolPath({ name: pool.name, driver: pool.driver, config: pool.config, stateDir: config.stateDir }),
        );
        if (!probe.ok)
          throw new ValidationError(`Volume size limits are not available on dir pool "${pool.name}": ${probe.reason}`);
      },
    },
    listeners: {
      setHttpsAddress: (a) => listeners!.setHttpsAddress(a),
      setDebugAddress: (a) => debugListener.setAddress(a),
      addresses: () => listeners?.addresses() ?? [],
    },
  });
  const listenerDeps: ListenerDeps = {
    app,
    db,
    bus,
    ops,
    trust,
    uiSessions,
    log: log.child({ component: 'api' }),
    tls: { ...serving, ca: pki?.ca, crl: pki?.crl },
    ...(opts.pingMs ? { pingMs: opts.pingMs } : {}),
    ...(opts.onRequest ? { onRequest: opts.onRequest } : {}),
    forwardUpgrade: createUpgradeForwarder({ db, node: config.nodeName, cluster }),
    protocolUpgrade: createDatabaseTunnelEndpoint({ cluster, stateDir: config.stateDir, log }),
    memberSocket: (req, url) =>
      url.pathname === MEMBER_EVENTS_PATH ? journal.serve(req, url, cluster.certificate()?.fingerprint) : undefined,
  };
  listeners = input.handover ? input.handover.adopt(listenerDeps) : createListeners(listenerDeps);
  return { app, listeners, debugListener, migrations, eventRelay, sharedKinds, memberImages };
}
