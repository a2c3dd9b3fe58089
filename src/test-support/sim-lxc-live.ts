/** The simulated cgroups and mounts of running containers (sim-lxc.ts), and the live look at them. */
import path from 'node:path';
import type { CgroupSetting, ContainerCgroups } from '../host/lxc/live-cgroup.ts';
import type { LiveMount } from '../host/lxc/live-mounts.ts';
import type { LiveLookAdapter } from '../observers/adapters.ts';
import type { LxcCgroupsAdapter, LxcMountsAdapter } from '../reconcilers/adapters.ts';
import type { SimLxcWorld } from './sim-lxc-world.ts';

export function createSimLxcCgroupsAndMounts(
  w: SimLxcWorld,
): LxcCgroupsAdapter & LxcMountsAdapter & Pick<LiveLookAdapter, 'driftedCgroupFiles'> {
  const { sim, containers, byPid, pidOfDir } = w;
  return {
    async locateCgroups(pid): Promise<ContainerCgroups> {
      sim.enter('locateCgroups');
      const { name } = byPid(pid);
      return { dirOf: (controller) => path.join('/sim/cgroup', controller ?? 'unified', `lxc.payload.${name}`) };
    },
    applyCgroupSettings(cg, settings: readonly CgroupSetting[]) {
      sim.enter('applyCgroupSettings');
      const applied: Record<string, string> = {};
      for (const s of settings) {
        const dir = cg.dirOf(s.controller);
        if (!dir || typeof s.value !== 'string') continue;
        const { c } = byPid(pidOfDir(dir));
        const file = path.join(dir, s.file);
        c.cgroup.set(file, s.value);
        applied[file] = s.value;
      }
      return applied;
    },
    setDeviceAccess(cg, rule, allow) {
      sim.enter('setDeviceAccess');
      const dir = cg.dirOf('devices')!;
      byPid(pidOfDir(dir)).c.cgroup.set(path.join(dir, allow ? 'devices.allow' : 'devices.deny'), rule);
    },
    baseAllowedDevices: () => [],
    driftedCgroupFiles(applied) {
      // A file of no running container: it is gone with it, not drift of a limit.
      const now = (file: string) => {
        for (const c of containers.values()) if (c.state !== 'STOPPED' && c.cgroup.has(file)) return c.cgroup.get(file);
        return undefined;
      };
      return Object.entries(applied)
        .filter(([file, value]) => now(file) !== undefined && now(file) !== value)
        .map(([file]) => file);
    },
    readMounts(pid) {
      const { c } = byPid(pid);
      return new Map([...c.mounts].map(([t, m]) => [t, { readonly: m.readonly, root: m.source }]));
    },
    async attachMount(pid, m: LiveMount) {
      sim.enter('attachMount');
      byPid(pid).c.mounts.set(`/${m.target.replace(/^\/+/, '')}`, { readonly: !!m.readonly, source: m.source });
    },
    async detachMount(pid, target) {
      sim.enter('detachMount');
      byPid(pid).c.mounts.delete(`/${target.replace(/^\/+/, '')}`);
    },
  };
}
