import assert from 'node:assert/strict';
import type { Db } from '../db/types.ts';
import type { UnpackAdapter } from '../reconcilers/adapters.ts';
import type { ContainerReconcilerDeps } from '../reconcilers/container/types.ts';
import { createRootfsState } from '../reconcilers/container/rootfs-state.ts';
import type { ImageFiles } from '../host/images/inspect-image.ts';
import type { SimLxc } from './sim-lxc.ts';
import type { SimStorage } from './sim-storage.ts';

/** Test support: the container (and image-volume) reconciler's deps on the simulators, for a cgroup v1 host. */
export function simContainerDeps(opts: {
  db: Db;
  stateDir: string;
  storage: SimStorage;
  lxc: SimLxc;
  unpack?: Partial<UnpackAdapter>;
  imageFiles?: (fingerprint: string) => Promise<ImageFiles>;
  onHostChange?: ContainerReconcilerDeps['onHostChange'];
}): ContainerReconcilerDeps {
  const ids = [{ start: 1_000_000, count: 1_000_000_000 }];
  return {
    db: opts.db,
    stateDir: opts.stateDir,
    storage: opts.storage,
    unpack: {
      unpackImage: async () => assert.fail('no image unpack expected'),
      unpackBackup: async () => assert.fail('no backup unpack expected'),
      ...opts.unpack,
    },
    imageFiles: opts.imageFiles ?? (async () => assert.fail('no image expected')),
    rootfsState: createRootfsState({ clock: { now: () => Date.now() } }),
    lxc: opts.lxc,
    lxcLive: opts.lxc,
    host: { cgroupVersion: 1, apparmorEnabled: false, cpuCount: 2, memoryBytes: 2 ** 31 },
    subids: { subuid: ids, subgid: ids },
    ...(opts.onHostChange ? { onHostChange: opts.onHostChange } : {}),
  };
}
