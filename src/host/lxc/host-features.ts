/**
 * Host facts the LXC config renderer takes as inputs, read from /sys without spawning:
 * - cgroup version: /sys/fs/cgroup/cgroup.controllers exists only when the unified hierarchy is mounted
 *   at /sys/fs/cgroup (pure v2 host) → `lxc.cgroup2.*`; a legacy or hybrid host (v1 controllers, maybe a
 *   controller-less cgroup2 at /sys/fs/cgroup/unified) → `lxc.cgroup.*`, as LXC itself decides.
 * - AppArmor: /sys/module/apparmor/parameters/enabled is `Y`.
 * - swap accounting (v1): the memory controller has memory.memsw.limit_in_bytes.
 */
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { CgroupVersion } from './types.ts';
import { CGROUP_V1 } from './cgroup-files.ts';

export interface LxcHostFeatures {
  cgroupVersion: CgroupVersion;
  apparmorEnabled: boolean;
  /** v1: memory.memsw.* exists; v2: always true (memory.swap.max is part of the memory controller). */
  swapAccounting: boolean;
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

export async function readLxcHostFeatures({ sysRoot = '/sys' }: { sysRoot?: string } = {}): Promise<LxcHostFeatures> {
  const cgroupRoot = path.join(sysRoot, 'fs/cgroup');
  const cgroupVersion: CgroupVersion = (await exists(path.join(cgroupRoot, 'cgroup.controllers'))) ? 2 : 1;
  const aa = await readFile(path.join(sysRoot, 'module/apparmor/parameters/enabled'), 'utf8').catch(() => '');
  const swapAccounting = cgroupVersion === 2 || (await exists(path.join(cgroupRoot, 'memory', CGROUP_V1.memswLimit)));
  return { cgroupVersion, apparmorEnabled: aa.trim() === 'Y', swapAccounting };
}
