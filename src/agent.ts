import { chmod, mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import { eq } from 'drizzle-orm';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { createApp } from './api/app.ts';
import type { AppEnv } from './api/context.ts';
import { assertUnixFree, createListeners } from './api/listeners.ts';
import { createDebugListener } from './api/debug/debug-listener.ts';
import { createTrustStore } from './api/trust-store.ts';
import type { DaemonConfig } from './config/daemon-config.ts';
import { openDaemonDatabase } from './db/open-daemon-database.ts';
import { createOwnVacuum } from './db/own-vacuum.ts';
import { createPrivatePostgres } from './host/postgres/private-postgres.ts';
import { runCommand } from './host/exec.ts';
import type { Database } from './db/types.ts';
import { ensureDefaultProject } from './desired/projects.ts';
import { ensureDefaultPool, POOL_KIND } from './desired/storage-pools.ts';
import { IMAGE_VOLUME_KIND, VOLUME_KIND } from './desired/storage-volumes.ts';
import { poolDependents } from './desired/pool-dependents.ts';
import { preloadFacts } from './desired/reconcile-facts.ts';
import { ValidationError } from './desired/errors.ts';
import { createStorageDrivers, probeDriver } from './host/storage/registry.ts';
import { probeProjectQuota } from './host/storage/dir.ts';
import { createPoolObserver } from './observers/pool-observer.ts';
import { createLiveDriftObserver } from './observers/live-drift-observer.ts';
import { createLiveRegistry } from './reconcilers/container/ensure-live.ts';
import { watchDevicePaths } from './host/devices/watch-device-paths.ts';
import { HOST_SYSFS } from './host/devices/sysfs-roots.ts';
import { createBackupExpiryObserver } from './observers/backup-expiry.ts';
import { createExecOutputExpiryObserver } from './observers/exec-output-expiry.ts';
import { createImageCacheObserver } from './observers/image-cache-observer.ts';
import { createContainerEventsObserver, createContainerObserver } from './observers/container-observer.ts';
import { readContainerState } from './observers/container-state.ts';
import { createContainerReconciler } from './reconcilers/container/reconcile.ts';
import { createRootfsState } from './reconcilers/container/rootfs-state.ts';
import { createLxcAdapter, createLxcLiveAdapter } from './host/lxc/lxc-adapter.ts';
import { createDeviceNodesAdapter } from './host/devices/device-nodes-adapter.ts';
import { createUnpackAdapter } from './host/unpack-adapter.ts';
import { planContainerBoot, shutdownContainers } from './reconcilers/container/boot.ts';
import { createBootSequencer } from './reconcilers/container/boot-sequencer.ts';
import { CONTAINER_KIND } from './desired/containers.ts';
import { readContainerWithPool } from './desired/container-pools.ts';
import { images } from './desired/schema/index.ts';
import { createImageStore, imageFilesIn } from './host/images/create-image-store.ts';
import { createImageHost } from './host/image-host/create-image-host.ts';
import { createNetworkHost } from './host/network/network-host.ts';
import { createNetworkAdapter } from './host/network/network-adapter.ts';
import { NETWORK_KIND, readNetworkById } from './desired/networks.ts';
import { networkDependents } from './desired/network-nics.ts';
import { readSriov } from './host/devices/read-sriov.ts';
import { createNetworkReconciler } from './reconcilers/network/reconcile.ts';
import { createNetworkObserver } from './observers/network-observer.ts';
import { createContainerHost } from './host/container-host/create-container-host.ts';
import { readLxcHostFeatures } from './host/lxc/host-features.ts';
import { parseSubids } from './host/idmap/parse-subids.ts';
import { createConvergence } from './reconcilers/convergence.ts';
import { createPoolReconciler } from './reconcilers/storage-pool/reconcile.ts';
import { createVolumeReconciler } from './reconcilers/storage-volume/reconcile.ts';
import { createImageVolumeReconciler } from './reconcilers/image-volume/reconcile.ts';
import { readServerKeys } from './desired/server-config.ts';
import { createEventBus, type EventBus } from './events/index.ts';
import { createDevsvc } from './devsvc/create-devsvc.ts';
import { readHostInfo } from './host/host-info.ts';
import { createResourcesCache } from './host/resources/index.ts';
import { createLogger } from './log.ts';
import { createDriftReporter, createObserverRunner } from './observers/index.ts';
import { createOperations, type Operations } from './operations/index.ts';
import {
  createReconcileManager,
  systemClock,
  TerminalError,
  type Clock,
  type ReconcileManager,
  type Reconciler,
} from './reconcilers/runtime/index.ts';
import { createStatusSettler } from './reconcilers/status-settler.ts';
import { ensureServerCertificate } from './tls/ensure-server-certificate.ts';
import { readServerPki } from './tls/read-server-pki.ts';
import { createProtocolRegistry } from './host/images/remote/protocol-registry.ts';
import { createSvcProtocol } from './host/images/remote/svc-protocol.ts';
import { createSimplestreamsProtocol } from './host/images/remote/simplestreams-protocol.ts';
import { createRemoteImages } from './host/images/remote/download-remote-image.ts';
import { createImagePulls } from './api/image-pulls.ts';
import { imagesDirOf, lxcPathOf, stateTrashOf, unixSocketOf } from './host/layout.ts';
import { createTrash } from './host/storage/trash.ts';
import { probeListen } from './host/proxy/bound-sockets.ts';
import { createHostProxyAdapter } from './host/proxy/host-proxy-adapter.ts';
import { createProxyDriftObserver } from './observers/proxy-drift-observer.ts';
import { ownedOnly } from './cluster/owned-only.ts';
import { createHeldKeys } from './cluster/held-keys.ts';
import { startMember } from './cluster/start-member.ts';
import { createClusterService } from './cluster/cluster-service.ts';
import { createMemberImages } from './cluster/member-images.ts';
import { createEventRelay } from './cluster/event-relay.ts';
import { createUpgradeForwarder } from './cluster/forward-upgrade.ts';
import { createSharedKindsWatch } from './cluster/shared-kinds-watch.ts';

export interface Agent {
  config: DaemonConfig;
  app: Hono<AppEnv>;
  database: Database;
  bus: EventBus;
  ops: Operations;
  log: Logger;
  reconcile: ReconcileManager;
  socketPath: string;
  /** Clean daemon stop: containers keep running. */
  stop(): Promise<void>;
  /** Host shutdown: stop containers by boot.stop.priority, then stop the daemon. */
  shutdownHost(): Promise<void>;
}

export interface AgentOptions {
  clock?: Clock;
  logDestination?: NodeJS.WritableStream;
  /** Reconcilers for each kind of desired state (storage, containers... arrive with their issues). */
  reconcilers?: Reconciler[];
  /** Events websocket ping interval (tests shorten it). */
  pingMs?: number;
  /** Backup expiry check period. */
  backupExpiryMs?: number;
  /** Container observer period (tests shorten it). */
  containerObserveMs?: number;
  /** How often running containers' cgroup limits and live mounts are compared with what svcd applied (default 5 s). */
  liveObserveMs?: number;
  /** Network health check period (default 1 s). */
  networkObserveMs?: number;
  /** Pool observer period (tests shorten it). */
  poolObserveMs?: number;
  /** Operation deadlines and sweep period (tests shorten them). */
  operations?: { defaultDeadlineMs?: number; sweepIntervalMs?: number; writeBehindMs?: number };
  /** Called for every API request (the process's idle GC watches it). */
  onRequest?: () => void;
}

/** The composition root: wires store, operations, reconcilers, observers and the API. Tests use it too. */
export async function createAgent(config: DaemonConfig, opts: AgentOptions = {}): Promise<Agent> {
  const clock = opts.clock ?? systemClock;
  await mkdir(config.stateDir, { recursive: true, mode: 0o711 });
  // Unprivileged containers' root (a high host uid) must be able to traverse to their rootfs.
  await chmod(config.stateDir, 0o711);
  const bus = createEventBus({ location: config.nodeName });
  const log = createLogger({
    level: config.logLevel,
    bus,
    ...(opts.logDestination ? { destination: opts.logDestination } : {}),
  });
  const { database, server: dbServer } = await openDaemonDatabase({
    stateDir: config.stateDir,
    databaseUrl: config.databaseUrl,
    embedded: config.embeddedDatabase,
    createServer: (d) =>
      createPrivatePostgres({
        ...d,
        binDir: config.postgresBinDir,
        run: runCommand,
        log: log.child({ component: 'database' }),
      }),
  });
  const { db } = database;
  // What reconcilers and observers record of the host commits through `relaxed` (Database.relaxed); what
  // users ask for, through `db`.
  const recorded = database.relaxed;
  if (await ensureDefaultProject(db)) await ensureDefaultPool(db, config.stateDir);
  const member = await startMember({ db, name: config.nodeName, clock, log: log.child({ component: 'cluster' }) });
  await preloadFacts(db);
  const [serverCert, host] = await Promise.all([ensureServerCertificate(config.stateDir), readHostInfo()]);
  const pki = await readServerPki(config.stateDir, serverCert.cert);
  if (pki)
    log.info(
      { crl: !!pki.crl },
      'PKI mode (server.ca): a client certificate must be issued by the CA, not revoked, and in the trust store',
    );
  if (pki?.warning) log.warn(pki.warning);

  const ops = createOperations({
    db,
    localWrites: database.localWrites,
    bus,
    clock,
    node: config.nodeName,
    log: log.child({ component: 'operations' }),
    ...opts.operations,
  });
  const orphaned = await ops.recover();
  if (orphaned) log.warn({ count: orphaned }, 'operations left running by a previous svcd ended as Failure');
  ops.start();

  const storage = createStorageDrivers();
  const lxc = createLxcAdapter();
  const lxcPath = lxcPathOf(config.stateDir);
  /** Until the boot sequencer runs, no container is powered up by the startup sweep. */
  const bootGate = { mayStart: (_id: string) => false };
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
  const convergence = createConvergence({ db });
  const observers = createObserverRunner({ clock, log: log.child({ component: 'observers' }) });
  // Reconcilers tell this observer what they left each container as; its drift reports go to the reconcile manager below.
  const containerObserver = createContainerObserver({
    db: recorded,
    localWrites: database.localWrites,
    lxc,
    node: config.nodeName,
    lxcPath: lxcPathOf(config.stateDir),
    stateDir: config.stateDir,
    bus,
    log: log.child({ component: 'observers', observer: 'containers' }),
    report: (kind, key, what) => drift.report(kind, key, what),
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
  /** Set once the cluster service exists (below): image files fetched from other members. */
  let memberImages: ReturnType<typeof createMemberImages> | undefined;
  const rootfsDeps = {
    db: recorded,
    stateDir: config.stateDir,
    storage,
    unpack: createUnpackAdapter(),
    rootfsState: createRootfsState({ clock }),
    imageFiles: async (fp: string) => {
      const [img] = await db.select({ split: images.split }).from(images).where(eq(images.fingerprint, fp)).limit(1);
      if (!img) throw new TerminalError(`image ${fp} is not on this host`);
      // In a cluster, an image imported through another member is fetched from it on first use.
      if (memberImages) return memberImages.ensureLocal(fp, img.split);
      return imageFilesIn(imagesDirOf(config.stateDir), fp, img.split);
    },
  };
  const network = createNetworkAdapter();
  // Members sharing one database: each converges only the containers and volumes it holds.
  const held = createHeldKeys(db, config.nodeName);
  // Proxy devices: one svcd-proxy forwarder per device of a running container, or nat mode's DNAT rules.
  const proxy = createHostProxyAdapter({ stateDir: config.stateDir });
  const reconcilers: Reconciler[] = [
    createNetworkReconciler({
      db: recorded,
      stateDir: config.stateDir,
      network,
      onRepaired: (name) =>
        void networkDependents(db, name).then(
          (ids) => ids.forEach((id) => reconcile.enqueue(CONTAINER_KIND, id, `network ${name} repaired`)),
          (err: unknown) => log.error({ err, network: name }, 'cannot list the containers of a repaired network'),
        ),
    }),
    createPoolReconciler({
      db: recorded,
      node: config.nodeName,
      stateDir: config.stateDir,
      storage,
      onHostChange: () => observers.runNow('storage-pools').catch(() => {}),
    }),
    ownedOnly(createVolumeReconciler({ db: recorded, stateDir: config.stateDir, storage }), held.volumes),
    createImageVolumeReconciler(rootfsDeps),
    ownedOnly(
      createContainerReconciler({
        ...rootfsDeps,
        lxc,
        lxcLive: createLxcLiveAdapter(),
        deviceNodes: createDeviceNodesAdapter(),
        host: { ...lxcFeatures, cpuCount: os.cpus().length, memoryBytes: os.totalmem() },
        subids,
        onHostChange: (id, seen, row) => containerObserver.observe(id, seen, row).catch(() => {}),
        boot: bootGate,
        bus,
        devsvc,
        trash,
        live,
        network,
        proxy,
        sysfs: { sysRoot: config.sysfsRoot ?? HOST_SYSFS.sysRoot, devRoot: config.devRoot ?? HOST_SYSFS.devRoot },
      }),
      held.containers,
    ),
    ...(opts.reconcilers ?? []),
  ];
  const reconcile = createReconcileManager({
    clock,
    reconcilers,
    // Most reconcile time is spent waiting for host commands (lxc-start, tar, rsync): run many at once.
    concurrency: 16,
    settler: createStatusSettler({ db: recorded, ops, convergence, notifyFirst: (kind) => kind === CONTAINER_KIND }),
    log: log.child({ component: 'reconcile' }),
    // What is on a pool waits for it: reconciled at once when it converges, not at the next backoff.
    watches: [
      // Containers with a nic on a network wait for it: started (or their nics attached) once it converges.
      {
        kind: NETWORK_KIND,
        map: async (id) => {
          const row = await readNetworkById(db, id);
          return row ? (await networkDependents(db, row.name)).map((key) => ({ kind: CONTAINER_KIND, key })) : [];
        },
      },
      {
        kind: POOL_KIND,
        map: async (name) => {
          const on = await poolDependents(db, name);
          const as = (kind: string, keys: string[]) => keys.map((key) => ({ kind, key }));
          return [
            ...as(CONTAINER_KIND, on.containers),
            ...as(VOLUME_KIND, on.customVolumes),
            ...as(IMAGE_VOLUME_KIND, on.imageVolumes),
          ];
        },
      },
    ],
  });
  const drift = createDriftReporter({
    enqueue: (kind, key, reason) => reconcile.enqueue(kind, key, reason),
    enqueueAfter: (kind, key, delayMs, reason) => reconcile.enqueueAfter(kind, key, delayMs, reason),
  });
  observers.register(containerObserver);
  observers.register(
    createContainerEventsObserver({
      lxcPath: lxcPathOf(config.stateDir),
      onEvent: (ev) => containerObserver.onMonitorEvent(ev),
    }),
  );
  observers.register(
    createLiveDriftObserver({
      live,
      report: drift.report,
      ...(opts.liveObserveMs ? { intervalMs: opts.liveObserveMs } : {}),
    }),
  );
  observers.register(createProxyDriftObserver({ live, proxy, report: drift.report }));
  observers.register(
    createBackupExpiryObserver({
      db: recorded,
      stateDir: config.stateDir,
      node: config.nodeName,
      ...(opts.backupExpiryMs ? { intervalMs: opts.backupExpiryMs } : {}),
    }),
  );
  observers.register(createExecOutputExpiryObserver({ stateDir: config.stateDir }));
  observers.register(
    createNetworkObserver({
      db: recorded,
      stateDir: config.stateDir,
      network,
      report: drift.report,
      ...(opts.networkObserveMs ? { intervalMs: opts.networkObserveMs } : {}),
    }),
  );
  observers.register(
    createPoolObserver({
      db: recorded,
      node: config.nodeName,
      stateDir: config.stateDir,
      driverFor: storage.driverFor,
      report: drift.report,
      ...(opts.poolObserveMs ? { intervalMs: opts.poolObserveMs } : {}),
    }),
  );

  const trust = createTrustStore({ db, pki: !!pki });
  // What the HTTPS listener presents: the server certificate, or the cluster's once this member is clustered.
  const serving = { ...serverCert };
  const cluster = createClusterService({
    db,
    node: config.nodeName,
    stateDir: config.stateDir,
    serving,
    setCertificate: (c) => listeners!.setCertificate(c),
  });
  await cluster.init();
  const resources = createResourcesCache({ ttlMs: 1_000 });
  const imageStore = createImageStore({ stateDir: config.stateDir });
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
  memberImages = createMemberImages({
    node: config.nodeName,
    cluster,
    store: imageStore,
    architectures: host.architectures,
    log: log.child({ component: 'cluster' }),
  });
  let listeners: ReturnType<typeof createListeners> | undefined;
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
  const app = createApp({
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
        ...(await readContainerState(row, rt && row.location !== config.nodeName ? { ...rt, pid: 0 } : rt)),
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
  listeners = createListeners({
    app,
    db,
    bus,
    ops,
    trust,
    log: log.child({ component: 'api' }),
    tls: { ...serving, ca: pki?.ca, crl: pki?.crl },
    ...(opts.pingMs ? { pingMs: opts.pingMs } : {}),
    ...(opts.onRequest ? { onRequest: opts.onRequest } : {}),
    forwardUpgrade: createUpgradeForwarder({ db, node: config.nodeName, cluster }),
  });
  const socketPath = unixSocketOf(config.stateDir);
  try {
    // Before anything touches the host: another svcd serving this state directory refuses this one.
    await assertUnixFree(socketPath);
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
    const boot = createBootSequencer({
      order: plan.order,
      // Starting a container is mostly the host's work (forks, mounts, cgroups): as many at once as it has cores.
      concurrency: Math.max(2, os.availableParallelism()),
      enqueue: (id) => reconcile.enqueue(CONTAINER_KIND, id, 'boot'),
      waitSettled: async (id) =>
        (await convergence.wait(CONTAINER_KIND, id, plan.order.find((o) => o.id === id)!.generation, 120_000)).ok,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    });
    bootGate.mayStart = boot.mayStart;
    // The start reconciles pools and networks first (their startup tier), every one once on this boot, before
    // anything that uses them is queued: a client's first look never finds its pool Pending or not mounted, and
    // a container's first DHCP request finds its network's dnsmasq serving. It waits at most 10 s for them.
    await reconcile.start();
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
    void boot.run();
    eventRelay.start();
    sharedKinds.start();
  } catch (e) {
    await listeners.close().catch(() => {});
    await debugListener.close().catch(() => {});
    await observers.stop().catch(() => {});
    await reconcile.stop().catch(() => {});
    await devsvc.close().catch(() => {});
    await ops.stop();
    member.stop();
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

  return {
    config,
    app,
    database,
    bus,
    ops,
    log,
    reconcile,
    socketPath,
    async shutdownHost() {
      // A host shutdown: nothing may start containers again while they are being stopped.
      log.info('host shutdown: stopping containers');
      eventRelay.stop();
      sharedKinds.stop();
      await listeners!.close();
      await debugListener.close();
      await observers.stop();
      hotplug.close();
      await reconcile.stop();
      await devsvc.close();
      await shutdownContainers({ db, node: config.nodeName, lxcPath, lxc, log });
      await ops.stop();
      member.stop();
      await database.close();
      await dbServer?.stop();
    },
    async stop() {
      log.info('svcd stopping');
      eventRelay.stop();
      sharedKinds.stop();
      await listeners!.close();
      await debugListener.close();
      await observers.stop();
      hotplug.close();
      await reconcile.stop();
      await devsvc.close();
      await ops.stop();
      member.stop();
      await database.close();
      // The embedded server keeps running: the next svcd adopts it (as systemd's KillMode=process leaves it).
      dbServer?.close();
    },
  };
}
