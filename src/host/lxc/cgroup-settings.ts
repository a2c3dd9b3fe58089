/**
 * The cgroup files svcd manages for a container and the values they should have, how a value the kernel
 * shows compares with one written, and device-cgroup rules. Pure: live-cgroup.ts writes and reads them.
 */
import { CGROUP_V1, CGROUP_V2 } from './cgroup-files.ts';
import type { CgroupVersion, LxcLimits, LxcUnixDevice } from './types.ts';

/** One cgroup file's wanted value: a literal, or `inherit` (what the parent cgroup has: cpuset, swappiness). */
export interface CgroupSetting {
  /** v1 controller whose hierarchy holds the file; undefined on the unified (v2) hierarchy. */
  controller?: string;
  file: string;
  value: string | { inherit: true };
}

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

/** The device-cgroup rule of a unix device (`c 1:3 rwm`). */
export const deviceRuleOf = (d: Pick<LxcUnixDevice, 'type' | 'major' | 'minor'>) =>
  `${d.type === 'char' ? 'c' : 'b'} ${d.major}:${d.minor} rwm`;

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
