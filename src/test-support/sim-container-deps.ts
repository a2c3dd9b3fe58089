import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ensureDefaultProject } from '../desired/projects.ts';
import { ensureDefaultPool } from '../desired/storage-pools.ts';
import { createPoolReconciler } from '../reconcilers/storage-pool/reconcile.ts';
import { createReconcileOnce } from './reconcile-once.ts';
import { createSimStorage } from './sim-storage.ts';
import type { Db } from '../db/types.ts';
import type { HostDevicesAdapter, NetworkAdapter, UnpackAdapter } from '../reconcilers/adapters.ts';
import { createSimHostDevices } from './sim-host-devices.ts';
import { createRootfsFilesAdapter } from '../host/templates/rootfs-files-adapter.ts';
import { createContainerFilesAdapter } from '../host/lxc/container-files-adapter.ts';
import type { ContainerReconcilerDeps } from '../reconcilers/container/types.ts';
import { createRootfsState } from '../reconcilers/container/rootfs-state.ts';
import type { ImageFiles } from '../host/images/inspect-image.ts';
import type { SimLxc } from './sim-lxc.ts';
import { createTrash } from '../host/storage/trash.ts';
import { createSimDeviceNodes, type SimDeviceNodes } from './sim-device-nodes.ts';
import type { SimStorage } from './sim-storage.ts';

/** A temp state dir and a storage simulator under it, with the default project and pool, the pool made by its reconciler. */
export async function openSimHost(db: Db, prefix: string): Promise<{ stateDir: string; storage: SimStorage }> {
  const stateDir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const storage = createSimStorage({ root: path.join(stateDir, 'pools') });
  await ensureDefaultProject(db);
  await ensureDefaultPool(db, stateDir);
  await createReconcileOnce(db)(createPoolReconciler({ db, node: 'n1', stateDir, storage }), 'default');
  return { stateDir, storage };
}

/** Test support: the container (and image-volume) reconciler's deps on the simulators, for a cgroup v1 host. */
export function simContainerDeps(opts: {
  db: Db;
  stateDir: string;
  storage: SimStorage;
  lxc: SimLxc;
  unpack?: Partial<UnpackAdapter>;
  imageFiles?: (fingerprint: string) => Promise<ImageFiles>;
  onHostChange?: ContainerReconcilerDeps['onHostChange'];
  network?: NetworkAdapter;
  deviceNodes?: SimDeviceNodes;
  hostDevices?: HostDevicesAdapter;
}): ContainerReconcilerDeps {
  const ids = [{ start: 1_000_000, count: 1_000_000_000 }];
  return {
    db: opts.db,
    stateDir: opts.stateDir,
    node: 'sim',
    storage: opts.storage,
    unpack: {
      unpackImage: async () => assert.fail('no image unpack expected'),
      unpackBackup: async () => assert.fail('no backup unpack expected'),
      ...opts.unpack,
    },
    imageFiles: opts.imageFiles ?? (async () => assert.fail('no image expected')),
    rootfsState: createRootfsState({ clock: { now: () => Date.now() } }),
    lxc: opts.lxc,
    liveCgroups: opts.lxc,
    liveMounts: opts.lxc,
    liveNics: opts.lxc,
    deviceNodes: opts.deviceNodes ?? createSimDeviceNodes(),
    hostDevices: opts.hostDevices ?? createSimHostDevices(),
    // The simulated pools are directories under the test's temp state dir (sim-storage.ts): the files in a
    // root volume and the container's LXC and log directories are real files there, read back by the tests.
    rootfsFiles: createRootfsFilesAdapter(),
    containerFiles: createContainerFilesAdapter(),
    // the state dir is a temp dir of the test's: its trash is a real one
    trash: createTrash(),
    host: { cgroupVersion: 1, apparmorEnabled: false, cpuCount: 2, memoryBytes: 2 ** 31 },
    subids: { subuid: ids, subgid: ids },
    ...(opts.onHostChange ? { onHostChange: opts.onHostChange } : {}),
    ...(opts.network ? { network: opts.network } : {}),
  };
}
