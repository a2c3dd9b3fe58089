/**
 * The real LXC adapters the reconcilers are given (their interfaces: src/reconcilers/adapters.ts): thin
 * objects over the runners in this folder.
 */
import type { LxcCgroupsAdapter, LxcMountsAdapter, LxcNicsAdapter } from '../../reconcilers/adapters.ts';
import { readHostLink } from '../devices/read-host-link.ts';
import { LXC_COMMON_CONF } from './render-config.ts';
import {
  containerState,
  freezeContainer,
  lxcInfo,
  startContainer,
  stopContainer,
  unfreezeContainer,
} from './lifecycle.ts';
import { createListeningCache, readHostStates } from './host-states.ts';
import { applyCgroupSettings, baseAllowedDevices, locateContainerCgroups, setDeviceAccess } from './live-cgroup.ts';
import { attachMount, detachMount, readContainerMounts } from './live-mounts.ts';
import {
  attachMacvlan,
  attachPhysical,
  detachMacvlan,
  detachPhysical,
  readContainerLinks,
  readPhysicalState,
  reclaimPhysical,
  type InsideNic,
  type PhysicalState,
} from './live-nic-types.ts';
import { adoptNic, applyNicRoutes, attachNic, detachNic, readHostVeth, rejoinBridge } from './live-nics.ts';
import { applyNicFilter } from './nic-filter.ts';
import { applyNicLimits } from './nic-limits.ts';
import { removeLeftovers } from './remove-leftovers.ts';

/** Power state, listing and leftovers of LXC containers. */
export function createLxcAdapter() {
  const listening = createListeningCache({ ttlMs: 250 });
  return {
    // The listening sockets shared for 250 ms by every state read (a resync reads all of them): host-states.ts.
    state: async (ref: Parameters<typeof containerState>[0]) =>
      containerState({ ...ref, listening: await listening() }),
    start: startContainer,
    stop: stopContainer,
    freeze: freezeContainer,
    unfreeze: unfreezeContainer,
    // Spawn-free where the host's records settle each state (host-states.ts); lxc-info for the others.
    list: (lxcPath: string, signal?: AbortSignal, names?: readonly string[]) =>
      readHostStates(
        lxcPath,
        { lxcInfo: (ref) => lxcInfo({ ...ref, ...(ref.signal ? { signal: ref.signal } : {}) }) },
        signal,
        names,
      ),
    removeLeftovers: async (name: string) => void (await removeLeftovers({ name })),
  };
}

/** A running container's cgroups: limits and device access written in place. */
export function createLxcCgroupsAdapter(): LxcCgroupsAdapter {
  return {
    locateCgroups: locateContainerCgroups,
    applyCgroupSettings,
    setDeviceAccess,
    baseAllowedDevices: () => baseAllowedDevices(LXC_COMMON_CONF),
  };
}

/** Mounts in a running container, through the mount helper. */
export function createLxcMountsAdapter(): LxcMountsAdapter {
  return { readMounts: readContainerMounts, attachMount, detachMount };
}

/** A running container's nics: veths, macvlan and physical interfaces, and what svcd sets around them. */
export function createLxcNicsAdapter(): LxcNicsAdapter {
  return {
    attachNic,
    detachNic,
    readHostVeth: (hostName: string) => readHostVeth(hostName),
    rejoinBridge,
    adoptNic: (pid: number, nic: { hostName: string; name: string }, signal?: AbortSignal) =>
      adoptNic(pid, nic, signal),
    applyNicLimits,
    applyNicFilter,
    applyNicRoutes,
    attachInsideNic: (pid: number, nic: InsideNic & { nictype: 'macvlan' | 'physical' }, signal?: AbortSignal) =>
      nic.nictype === 'macvlan' ? attachMacvlan(pid, nic, signal) : attachPhysical(pid, nic, process.pid, signal),
    detachInsideNic: (
      pid: number,
      nic: Pick<InsideNic, 'name' | 'parent'> & { nictype: 'macvlan' | 'physical'; was?: PhysicalState | undefined },
      signal?: AbortSignal,
    ) =>
      nic.nictype === 'macvlan'
        ? detachMacvlan(pid, nic.name, signal)
        : detachPhysical(pid, nic, process.pid, nic.was, signal),
    reclaimPhysical: (parent: string, was: PhysicalState, signal?: AbortSignal) => reclaimPhysical(parent, was, signal),
    readPhysical: (name: string) => readPhysicalState(name),
    readContainerLinks,
    hostHasLink: async (name: string) => (await readHostLink(name)) !== undefined,
  };
}
