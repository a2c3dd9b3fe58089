/** The reconcilers of every kind, each given the real host adapters of src/host (reconcilers/adapters.ts). */
import { ownedOnly } from '../cluster/owned-only.ts';
import { createHeldKeys } from '../cluster/held-keys.ts';
import { createLeavingMarks } from '../migration/leaving-marks.ts';
import { createMovedRelease } from '../reconcilers/container/release-moved.ts';
import type { createMemberImages } from '../cluster/member-images.ts';
import os from 'node:os';
import { eq } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { DaemonConfig } from '../config/daemon-config.ts';
import type { Db } from '../db/types.ts';
import { CONTAINER_KIND } from '../desired/containers.ts';
import { networkDependents } from '../desired/network-nics.ts';
import { images } from '../desired/schema/index.ts';
import type { EventBus } from '../events/index.ts';
import { createDeviceNodesAdapter } from '../host/devices/device-nodes-adapter.ts';
import { createHostDevicesAdapter } from '../host/devices/host-devices-adapter.ts';
import { HOST_SYSFS } from '../host/devices/sysfs-roots.ts';
import { imageFilesIn } from '../host/images/create-image-store.ts';
import { imagesDirOf } from '../host/layout.ts';
import { createContainerFilesAdapter } from '../host/lxc/container-files-adapter.ts';
import type { readLxcHostFeatures } from '../host/lxc/host-features.ts';
import {
  type createLxcAdapter,
  createLxcCgroupsAdapter,
  createLxcMountsAdapter,
  createLxcNicsAdapter,
} from '../host/lxc/lxc-adapter.ts';
import { createNetworkAdapter } from '../host/network/network-adapter.ts';
import { createHostProxyAdapter } from '../host/proxy/host-proxy-adapter.ts';
import type { StorageDrivers } from '../host/storage/registry.ts';
import type { Trash } from '../host/storage/trash.ts';
import { createRootfsFilesAdapter } from '../host/templates/rootfs-files-adapter.ts';
import { createUnpackAdapter } from '../host/unpack-adapter.ts';
import type { LiveRegistry } from '../reconcilers/container/ensure-live.ts';
import { createContainerReconciler } from '../reconcilers/container/reconcile.ts';
import { createRootfsState } from '../reconcilers/container/rootfs-state.ts';
import type { ContainerReconcilerDeps } from '../reconcilers/container/types.ts';
import { createImageVolumeReconciler } from '../reconcilers/image-volume/reconcile.ts';
import { createNetworkReconciler } from '../reconcilers/network/reconcile.ts';
import { type Clock, type Reconciler, TerminalError } from '../reconcilers/runtime/index.ts';
import { createPoolReconciler } from '../reconcilers/storage-pool/reconcile.ts';
import { createVolumeReconciler } from '../reconcilers/storage-volume/reconcile.ts';
import type { BootGate } from '../reconcilers/container/boot-sequencer.ts';
import type { AgentOptions } from './types.ts';

export interface ReconcilersInput {
  config: DaemonConfig;
  opts: AgentOptions;
  db: Db;
  /** The relaxed handle: what reconcilers record of the host (Database.relaxed). */
  recorded: Db;
  clock: Clock;
  log: Logger;
  bus: EventBus;
  storage: StorageDrivers;
  lxc: ReturnType<typeof createLxcAdapter>;
  lxcFeatures: Awaited<ReturnType<typeof readLxcHostFeatures>>;
  subids: ContainerReconcilerDeps['subids'];
  trash: Trash;
  live: LiveRegistry;
  devsvc: NonNullable<ContainerReconcilerDeps['devsvc']>;
  bootGate: BootGate;
  /** A key to reconcile (the reconcile manager's, made after the reconcilers). */
  enqueue(kind: string, key: string, reason: string): void;
  /** A pool changed on the host: its observer looks now. */
  onPoolChange(): Promise<void>;
  /** Image files fetched from other members (set once the cluster service exists). */
  memberImages(): ReturnType<typeof createMemberImages> | undefined;
  /** Keeps containers on their last desired state while the database cannot be reached. */
  keeper: NonNullable<ContainerReconcilerDeps['keeper']>;
  /** What a reconcile left a container as, for the container observer. */
  observeContainer: NonNullable<ContainerReconcilerDeps['onHostChange']>;
}

export function buildReconcilers(input: ReconcilersInput) {
  const { config, opts, db, recorded, clock, log, bus, storage, lxc, lxcFeatures, subids, trash, live } = input;
  const { devsvc, bootGate, enqueue, onPoolChange, observeContainer, keeper } = input;
  const rootfsDeps = {
    db: recorded,
    stateDir: config.stateDir,
    node: config.nodeName,
    storage,
    unpack: createUnpackAdapter(),
    rootfsFiles: createRootfsFilesAdapter(),
    rootfsState: createRootfsState({ clock }),
    imageFiles: async (fp: string) => {
      const [img] = await db.select({ split: images.split }).from(images).where(eq(images.fingerprint, fp)).limit(1);
      if (!img) throw new TerminalError(`image ${fp} is not on this host`);
      // In a cluster, an image imported through another member is fetched from it on first use.
      const fromMembers = input.memberImages();
      if (fromMembers) return fromMembers.ensureLocal(fp, img.split);
      return imageFilesIn(imagesDirOf(config.stateDir), fp, img.split);
    },
  };
  const network = createNetworkAdapter();
  // Members sharing one database: each converges only the containers and volumes it holds.
  const held = createHeldKeys(db, config.nodeName);
  // Proxy devices: one svcd-proxy forwarder per device of a running container, or nat mode's DNAT rules.
  const proxy = createHostProxyAdapter({ stateDir: config.stateDir });
  const containerDeps: ContainerReconcilerDeps = {
    ...rootfsDeps,
    lxc,
    liveCgroups: createLxcCgroupsAdapter(),
    liveMounts: createLxcMountsAdapter(),
    liveNics: createLxcNicsAdapter(),
    deviceNodes: createDeviceNodesAdapter(),
    host: { ...lxcFeatures, cpuCount: os.cpus().length, memoryBytes: os.totalmem() },
    subids,
    onHostChange: observeContainer,
    boot: bootGate,
    bus,
    devsvc,
    trash,
    live,
    network,
    proxy,
    hostDevices: createHostDevicesAdapter({
      sysRoot: config.sysfsRoot ?? HOST_SYSFS.sysRoot,
      devRoot: config.devRoot ?? HOST_SYSFS.devRoot,
    }),
    containerFiles: createContainerFilesAdapter(),
    keeper,
  };
  const reconcilers: Reconciler[] = [
    createNetworkReconciler({
      db: recorded,
      stateDir: config.stateDir,
      node: config.nodeName,
      network,
      // Those the boot holds for their wave start with it, on the repaired network.
      onRepaired: (name) =>
        void networkDependents(db, name).then(
          (ids) =>
            ids
              .filter((id) => bootGate.mayStart(id))
              .forEach((id) => enqueue(CONTAINER_KIND, id, `network ${name} repaired`)),
          (err: unknown) => log.error({ err, network: name }, 'cannot list the containers of a repaired network'),
        ),
    }),
    createPoolReconciler({
      db: recorded,
      node: config.nodeName,
      stateDir: config.stateDir,
      storage,
      onHostChange: onPoolChange,
    }),
    ownedOnly(
      createVolumeReconciler({ db: recorded, stateDir: config.stateDir, node: config.nodeName, storage }),
      held.volumes,
    ),
    createImageVolumeReconciler(rootfsDeps),
    // The container reconciler reads its row anyway: it leaves another member's containers alone itself (one
    // round trip fewer than ownedOnly's look), and lists only this member's: not those the boot holds for their
    // wave (the boot sequencer queues each when its turn comes), so the wave under way has the host to itself.
    {
      ...createContainerReconciler({
        ...containerDeps,
        // A container moved to another member: its copy here goes once the move committed.
        ownership: { release: createMovedRelease(containerDeps, createLeavingMarks(config.stateDir)) },
      }),
      listKeys: async () => (await held.containers.listOwned()).filter((id) => bootGate.mayStart(id)),
    },
    ...(opts.reconcilers ?? []),
  ];
  return { reconcilers, network, proxy };
}
