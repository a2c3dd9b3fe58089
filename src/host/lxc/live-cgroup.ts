/**
 * A running container's cgroup limits, changed in place: the same values LXC writes at start from
 * `lxc.cgroup.*` / `lxc.cgroup2.*` (render-config.ts), written to the container's cgroup directory
 * (`…/lxc.payload.<name>`, found from init's /proc/<pid>/cgroup) so a limit reaches the container without a
 * restart. A limit that is no longer set goes back to what the container would have without it
 * (unlimited, or the parent's value for cpuset and swappiness).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readMounts } from '../storage/mountinfo.ts';
import {
  cgroupDir,
  cgroupMountsFrom,
  containerCgroupPath,
  parseProcCgroup,
  type CgroupMounts,
} from './parse-cgroup.ts';
import { CgroupWriteError } from './lxc-errors.ts';
import { CGROUP_V1, CGROUP_V2 } from './cgroup-files.ts';
import {
  type CgroupSetting,
  cgroupSettingsOf,
  deviceRuleCovered,
  deviceRuleOf,
  parseAllowedDevices,
  sameCgroupValue,
} from './cgroup-settings.ts';

export { CgroupWriteError };
export { cgroupSettingsOf, deviceRuleCovered, deviceRuleOf, parseAllowedDevices, sameCgroupValue };
export type { CgroupSetting };

/** The config key a setting comes from, for error messages. */
const KEY_OF: Record<string, string> = {
  [CGROUP_V1.cpus]: 'limits.cpu',
  [CGROUP_V1.memoryLimit]: 'limits.memory',
  [CGROUP_V2.memoryLimit]: 'limits.memory',
  [CGROUP_V1.memswLimit]: 'limits.memory.swap',
  [CGROUP_V2.swapLimit]: 'limits.memory.swap',
  [CGROUP_V1.swappiness]: 'limits.memory.swap',
  [CGROUP_V1.pidsLimit]: 'limits.processes',
};

/** The container's cgroup directories: per v1 controller, and the unified one. */
export interface ContainerCgroups {
  dirOf(controller: string | undefined): string | undefined;
}

let mountsOnce: Promise<CgroupMounts> | undefined;
/** cgroup hierarchies do not move while svcd runs: read the mount table once. */
export const cgroupMounts = () =>
  (mountsOnce ??= readMounts()
    .then(cgroupMountsFrom)
    .catch((e) => {
      mountsOnce = undefined;
      throw e;
    }));

/** Where init (`pid`, host pid namespace) has its container's cgroups; rejects when the pid is gone. */
export async function locateContainerCgroups(pid: number): Promise<ContainerCgroups> {
  const proc = parseProcCgroup(readFileSync(`/proc/${pid}/cgroup`, 'utf8'));
  const mounts = await cgroupMounts();
  return {
    dirOf(controller) {
      if (controller === undefined)
        return mounts.v2 && proc.v2 !== undefined ? cgroupDir(mounts.v2, containerCgroupPath(proc.v2)) : undefined;
      const m = mounts.v1.get(controller);
      const p = proc.v1.get(controller);
      return m && p !== undefined ? cgroupDir(m, containerCgroupPath(p)) : undefined;
    },
  };
}

const readTrim = (file: string) => readFileSync(file, 'utf8').trim();

function explain(setting: CgroupSetting, value: string, e: NodeJS.ErrnoException, dir: string): CgroupWriteError {
  const key = KEY_OF[setting.file] ?? setting.file;
  let why = e.code ?? e.message;
  if (e.code === 'EBUSY' && setting.file.startsWith('memory.')) {
    let usage = '';
    try {
      usage = ` (it uses ${readTrim(path.join(dir, setting.file.includes('memsw') ? CGROUP_V1.memswUsage : CGROUP_V1.memoryUsage))} bytes)`;
    } catch {
      // no usage to show
    }
    why = `the kernel could not reclaim enough memory from the running container${usage}`;
  } else if (e.code === 'EINVAL' && setting.file === CGROUP_V1.cpus) why = 'the host cgroup does not allow these CPUs';
  return new CgroupWriteError(
    key,
    setting.file,
    e.code,
    `${key}: cannot set ${setting.file} to ${value} on the running container: ${why}`,
  );
}

/**
 * Bring the container's cgroup files to `settings`, writing only what differs. Returns what each file
 * shows afterwards (host path → value), which is what drift is compared with. Throws a CgroupWriteError
 * for a value the kernel refuses (a memory limit below what the container cannot give back, CPUs the
 * host's cgroup lacks); the files written before it keep their new values.
 */
export function applyCgroupSettings(cg: ContainerCgroups, settings: readonly CgroupSetting[]): Record<string, string> {
  const applied: Record<string, string> = {};
  const pending: { s: CgroupSetting; file: string; value: string; dir: string }[] = [];
  for (const s of settings) {
    const dir = cg.dirOf(s.controller);
    if (!dir) continue;
    const file = path.join(dir, s.file);
    let value: string;
    let current: string;
    try {
      value = typeof s.value === 'string' ? s.value : readTrim(path.join(path.dirname(dir), s.file));
      current = readTrim(file);
    } catch {
      continue; // a file this kernel does not have (e.g. memsw without swap accounting)
    }
    if (sameCgroupValue(s.file, value, current)) applied[file] = current;
    else pending.push({ s, file, value, dir });
  }
  // memory+swap must stay >= memory: a write refused with EINVAL is tried again after the others.
  let retry: typeof pending = [];
  for (const round of [0, 1]) {
    const list = round === 0 ? pending : retry;
    retry = [];
    for (const p of list) {
      try {
        writeFileSync(p.file, p.value);
        applied[p.file] = readTrim(p.file);
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (round === 0 && err.code === 'EINVAL' && p.s.file.startsWith('memory.')) retry.push(p);
        else throw explain(p.s, p.value, err, p.dir);
      }
    }
  }
  return applied;
}

/**
 * cgroup v1: allow (or deny) a device node in the container's device cgroup. An allow goes to the container's
 * cgroup and every cgroup below it (an init such as systemd makes its own, which keep their own lists); a deny
 * given to the container's cgroup reaches every cgroup below it.
 */
export function setDeviceAccess(cg: ContainerCgroups, rule: string, allow: boolean): void {
  const dir = cg.dirOf('devices');
  if (!dir) throw new Error('the container has no devices cgroup (v1) here');
  if (!allow) {
    writeFileSync(path.join(dir, CGROUP_V1.devicesDeny), rule);
    return;
  }
  const walk = (d: string, depth: number) => {
    writeFileSync(path.join(d, CGROUP_V1.devicesAllow), rule);
    if (depth > 8) return;
    for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name), depth + 1);
  };
  walk(dir, 0);
}

/** Whether `applied` (host path → value) still holds: the files that changed since. */
export function driftedCgroupFiles(applied: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [file, value] of Object.entries(applied)) {
    let now: string;
    try {
      now = readTrim(file);
    } catch {
      continue; // the container is gone: not drift of a limit
    }
    if (now !== value) out.push(file);
  }
  return out;
}

let baseAllowed: string[] | undefined;
/** What LXC's common.conf allows every container (`/dev/null`, `/dev/zero`, ttys ...): never denied when a device goes. */
export function baseAllowedDevices(file: string): string[] {
  if (!baseAllowed) {
    try {
      baseAllowed = parseAllowedDevices(readFileSync(file, 'utf8'));
    } catch {
      baseAllowed = [];
    }
  }
  return baseAllowed;
}
