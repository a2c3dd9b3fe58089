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
import type { CgroupVersion, LxcLimits, LxcUnixDevice } from './types.ts';
import { CgroupWriteError } from './lxc-errors.ts';
import { CGROUP_V1, CGROUP_V2 } from './cgroup-files.ts';

export { CgroupWriteError };

/** One cgroup file's wanted value: a literal, or `inherit` (what the parent cgroup has: cpuset, swappiness). */
export interface CgroupSetting {
  /** v1 controller whose hierarchy holds the file; undefined on the unified (v2) hierarchy. */
  controller?: string;
  file: string;
  value: string | { inherit: true };
}

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

/**
 * Every cgroup file svcd manages for a container and the value it should have now, set or not: so a limit
 * that was removed is put back to its default. Pure; the order is the order of writing (memory before
 * memory+swap, which must not be below it, unless it is raised: the writer retries in the other order).
 */
export function cgroupSettingsOf(version: CgroupVersion, limits: LxcLimits, swapAccounting: boolean): CgroupSetting[] {
  const inherit = { inherit: true as const };
  if (version === 2) {
    return [
      { file: CGROUP_V2.cpus, value: limits.cpuset ?? '' },
      { file: CGROUP_V2.memoryLimit, value: limits.memoryBytes !== undefined ? String(limits.memoryBytes) : 'max' },
      { file: CGROUP_V2.swapLimit, value: limits.swap === false ? '0' : 'max' },
      { file: CGROUP_V2.pidsLimit, value: limits.processes !== undefined ? String(limits.processes) : 'max' },
    ];
  }
  const out: CgroupSetting[] = [
    { controller: 'cpuset', file: CGROUP_V1.cpus, value: limits.cpuset ?? inherit },
    {
      controller: 'memory',
      file: CGROUP_V1.memoryLimit,
      value: limits.memoryBytes !== undefined ? String(limits.memoryBytes) : '-1',
    },
  ];
  if (swapAccounting) {
    const memsw = limits.swap === false && limits.memoryBytes !== undefined ? String(limits.memoryBytes) : '-1';
    out.push({ controller: 'memory', file: CGROUP_V1.memswLimit, value: memsw });
  }
  out.push({ controller: 'memory', file: CGROUP_V1.swappiness, value: limits.swap === false ? '0' : inherit });
  out.push({
    controller: 'pids',
    file: CGROUP_V1.pidsLimit,
    value: limits.processes !== undefined ? String(limits.processes) : 'max',
  });
  return out;
}

/** CPU list → sorted ids (`0-2,4` → [0,1,2,4]); undefined when it is not a list. */
function cpuIds(list: string): number[] | undefined {
  if (list.trim() === '') return [];
  const out = new Set<number>();
  for (const part of list.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return undefined;
    for (let i = Number(m[1]); i <= Number(m[2] ?? m[1]); i++) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

/** The largest value v1 shows for "no limit" is near 2^63; anything from 2^62 up reads as unlimited. */
const UNLIMITED_V1 = 2 ** 62;

/** Whether the value a cgroup file shows (`current`) is what writing `wanted` gives (the kernel rounds and normalises). */
export function sameCgroupValue(file: string, wanted: string, current: string): boolean {
  const cur = current.trim();
  if (cur === wanted) return true;
  if (file === CGROUP_V1.cpus) {
    const a = cpuIds(wanted);
    const b = cpuIds(cur);
    return !!a && !!b && a.length === b.length && a.every((x, i) => x === b[i]);
  }
  if (/^memory\.(memsw\.)?limit_in_bytes$/.test(file)) {
    if (!/^\d+$/.test(cur)) return false;
    if (wanted === '-1') return Number(cur) >= UNLIMITED_V1;
    // Rounded down to the page size.
    const w = Number(wanted);
    return Number(cur) <= w && w - Number(cur) < 65536;
  }
  if (/^memory\.(swap\.)?max$/.test(file)) {
    if (!/^\d+$/.test(cur) || !/^\d+$/.test(wanted)) return false;
    const w = Number(wanted);
    return Number(cur) <= w && w - Number(cur) < 65536;
  }
  return false;
}

/** The container's cgroup directories: per v1 controller, and the unified one. */
export interface ContainerCgroups {
  dirOf(controller: string | undefined): string | undefined;
}

let mountsOnce: Promise<CgroupMounts> | undefined;
/** cgroup hierarchies do not move while svcd runs: read the mount table once. */
const cgroupMounts = () =>
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

/** The device-cgroup rule of a unix device (`c 1:3 rwm`). */
export const deviceRuleOf = (d: Pick<LxcUnixDevice, 'type' | 'major' | 'minor'>) =>
  `${d.type === 'char' ? 'c' : 'b'} ${d.major}:${d.minor} rwm`;

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

/** The device rules (`c 1:3 rwm`) that `lxc.cgroup.devices.allow` lines of an LXC config file allow. Pure. */
export function parseAllowedDevices(configText: string): string[] {
  const out: string[] = [];
  for (const line of configText.split('\n')) {
    const m = /^\s*lxc\.cgroup2?\.devices\.allow\s*=\s*(.+?)\s*$/.exec(line);
    if (m && !out.includes(m[1]!)) out.push(m[1]!);
  }
  return out;
}

/** Whether `rule` (`c 1:3 rwm`) is wholly allowed by one of `allowed` (`a`, `c *:* m`, `c 136:* rwm` ...). Pure. */
export function deviceRuleCovered(rule: string, allowed: readonly string[]): boolean {
  const [type, nums, access = ''] = rule.split(/\s+/);
  const [major, minor] = (nums ?? '').split(':');
  return allowed.some((a) => {
    const [t, n = '*:*', acc = 'rwm'] = a.split(/\s+/);
    if (t === 'a') return true;
    const [ma, mi] = n.split(':');
    return (
      t === type &&
      (ma === '*' || ma === major) &&
      (mi === '*' || mi === minor) &&
      [...access].every((ch) => acc.includes(ch))
    );
  });
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
