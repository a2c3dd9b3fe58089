import { renderIdmapLines } from '../idmap/render-idmap-lines.ts';
import type { CgroupVersion, LxcDiskMount, LxcLimits, LxcNic, LxcSpec, LxcUnixDevice } from './types.ts';
import { CGROUP_V1, CGROUP_V2 } from './cgroup-files.ts';

export const LXC_COMMON_CONF = '/usr/share/lxc/config/common.conf';
export const LXC_USERNS_CONF = '/usr/share/lxc/config/userns.conf';

/** One `key = value` line; refuses values that would break out of the line (config injection). */
function line(key: string, value: string | number): string {
  const v = String(value);
  if (/[\r\n\0]/.test(v))
    throw new Error(`LXC config value for ${key} contains a line break or NUL: ${JSON.stringify(v)}`);
  return `${key} = ${v}`;
}

/** Escape a path for an fstab-format field (`lxc.mount.entry`): space, tab and backslash as octal. */
export function escapeFstabField(p: string): string {
  return p.replace(/[\\ \t]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

function relTarget(target: string): string {
  const rel = target.replace(/^\/+/, '');
  if (rel === '' || rel.split('/').includes('..'))
    throw new Error(`mount target ${JSON.stringify(target)} must be an absolute path below / without ".."`);
  return rel;
}

function cgroupLines(version: CgroupVersion, limits: LxcLimits | undefined): string[] {
  if (!limits) return [];
  const key = (v1: string, v2: string) => (version === 1 ? `lxc.cgroup.${v1}` : `lxc.cgroup2.${v2}`);
  const out: string[] = [];
  if (limits.cpuset !== undefined) {
    if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(limits.cpuset))
      throw new Error(`cpuset ${JSON.stringify(limits.cpuset)} is not a CPU list`);
    out.push(line(key(CGROUP_V1.cpus, CGROUP_V2.cpus), limits.cpuset));
  }
  if (limits.memoryBytes !== undefined)
    out.push(line(key(CGROUP_V1.memoryLimit, CGROUP_V2.memoryLimit), limits.memoryBytes));
  if (limits.swap === false) {
    if (version === 2) out.push(line(`lxc.cgroup2.${CGROUP_V2.swapLimit}`, 0));
    else {
      // memsw caps memory+swap, so equal to the memory limit means no swap; it must follow limit_in_bytes.
      if (limits.swapAccounting && limits.memoryBytes !== undefined)
        out.push(line(`lxc.cgroup.${CGROUP_V1.memswLimit}`, limits.memoryBytes));
      out.push(line(`lxc.cgroup.${CGROUP_V1.swappiness}`, 0));
    }
  }
  if (limits.processes !== undefined) out.push(line(key(CGROUP_V1.pidsLimit, CGROUP_V2.pidsLimit), limits.processes));
  return out;
}

function nicLines(nics: readonly LxcNic[]): string[] {
  return nics.flatMap((nic, i) => {
    const k = (s: string) => `lxc.net.${i}.${s}`;
    const type = nic.type ?? 'veth';
    if (type !== 'veth' && !nic.parent) throw new Error(`a ${type} nic needs a host interface (link)`);
    return [
      line(k('type'), type),
      ...(nic.parent ? [line(k('link'), nic.parent)] : []),
      ...(type === 'macvlan' ? [line(k('macvlan.mode'), 'bridge')] : []),
      line(k('name'), nic.name),
      ...(nic.hwaddr ? [line(k('hwaddr'), nic.hwaddr)] : []),
      ...(nic.mtu !== undefined ? [line(k('mtu'), nic.mtu)] : []),
      ...(nic.hostName && type === 'veth' ? [line(k('veth.pair'), nic.hostName)] : []),
      line(k('flags'), 'up'),
    ];
  });
}

function diskLine(d: LxcDiskMount): string {
  const opts = [
    d.recursive ? 'rbind' : 'bind',
    `create=${d.kind}`,
    ...(d.readonly ? ['ro'] : []),
    ...(d.propagation ? [d.propagation] : []),
    ...(d.optional ? ['optional'] : []),
    ...(d.idmap ? ['idmap=container'] : []),
  ];
  return line(
    'lxc.mount.entry',
    `${escapeFstabField(d.source)} ${escapeFstabField(relTarget(d.target))} none ${opts.join(',')} 0 0`,
  );
}

function unixDeviceLines(version: CgroupVersion, devices: readonly LxcUnixDevice[]): string[] {
  const allow = version === 1 ? 'lxc.cgroup.devices.allow' : 'lxc.cgroup2.devices.allow';
  return devices.flatMap((d) => {
    const opts = ['bind', 'create=file', ...(d.optional ? ['optional'] : [])];
    return [
      line(
        'lxc.mount.entry',
        `${escapeFstabField(d.source)} ${escapeFstabField(relTarget(d.target))} none ${opts.join(',')} 0 0`,
      ),
      line(allow, `${d.type === 'char' ? 'c' : 'b'} ${d.major}:${d.minor} rwm`),
    ];
  });
}

const depth = (p: string) => p.split('/').filter(Boolean).length;
const norm = (p: string) => p.replace(/^\/+/, '');
const byKey = <T>(r: Record<string, T> | undefined) =>
  Object.entries(r ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/**
 * The text of an LXC config file for `spec`. Pure: every host fact (cgroup version, AppArmor, swap
 * accounting, the idmap, which CPUs) is an input. Disk mounts are ordered parents first so a mount
 * never hides another; maps are rendered in key order so the same spec always gives the same text.
 */
export function renderLxcConfig(spec: LxcSpec): string {
  if (!spec.privileged && !(spec.idmap && spec.idmap.uid.length > 0 && spec.idmap.gid.length > 0)) {
    throw new Error('an unprivileged container needs a uid and a gid map');
  }
  if (spec.privileged && spec.idmappedRootfs) throw new Error('an idmapped rootfs needs an unprivileged container');
  if (spec.privileged && spec.disks?.some((d) => d.idmap))
    throw new Error('an idmapped mount needs an unprivileged container');
  const out: string[] = [
    '# Generated by svcd; rewritten at every start, do not edit.',
    line('lxc.include', LXC_COMMON_CONF),
  ];
  // common.conf pulls in lxcfs's post-stop hook, which only sleeps 0.5 s (for LXC's in-place reboot,
  // which svcd never uses: a restart is a stop and a start). Without this line every stop takes 0.5 s more.
  out.push('lxc.hook.post-stop =');
  // And its mount hook (a shell script run at every start, ~13 ms here) has nothing to do without lxcfs.
  if (spec.lxcfs === false) out.push('lxc.hook.mount =');
  for (const hook of spec.mountHooks ?? []) out.push(line('lxc.hook.mount', hook));
  // No /dev/ttyN (common.conf makes 4): the API offers the console only, as LXD does (lxc.tty.max = 0).
  // Each tty is a pty of the host's shared pool (kernel.pty.max − pty.reserve = 3072 by default) that
  // containers all draw from: with 5 a container, the 615th one's start failed for want of a pty.
  out.push(line('lxc.tty.max', 0));
  if (!spec.privileged) out.push(line('lxc.include', LXC_USERNS_CONF));
  if (spec.architecture) out.push(line('lxc.arch', spec.architecture));
  out.push(line('lxc.uts.name', spec.hostname), line('lxc.rootfs.path', `dir:${spec.rootfsPath}`));
  if (spec.idmappedRootfs) out.push(line('lxc.rootfs.options', 'idmap=container'));
  if (!spec.privileged && spec.idmap) out.push(...renderIdmapLines(spec.idmap));
  out.push(line('lxc.autodev', spec.autodev === false ? 0 : 1));
  out.push(line('lxc.apparmor.profile', spec.apparmorEnabled ? (spec.apparmorProfile ?? 'generated') : 'unconfined'));
  if (spec.haltSignal) out.push(line('lxc.signal.halt', spec.haltSignal));
  if (spec.seccompProfile) out.push(line('lxc.seccomp.profile', spec.seccompProfile));
  if (spec.logFile) out.push(line('lxc.log.file', spec.logFile), line('lxc.log.level', spec.logLevel ?? 'INFO'));
  // The console log is capped so a chatty console cannot fill the disk: at 128 KiB (auto) LXC
  // renames it to <file>.1 (replacing the previous one) and starts a new one.
  if (spec.consoleLogFile)
    out.push(
      line('lxc.console.logfile', spec.consoleLogFile),
      line('lxc.console.size', 'auto'),
      line('lxc.console.rotate', 1),
    );
  out.push(...cgroupLines(spec.cgroupVersion, spec.limits));
  for (const [name, value] of byKey(spec.prlimits)) {
    if (!/^[a-z]+$/.test(name)) throw new Error(`kernel limit name ${JSON.stringify(name)} is not a resource name`);
    if (!/^(unlimited|\d+)(:(unlimited|\d+))?$/.test(value))
      throw new Error(`kernel limit ${name}=${JSON.stringify(value)} must be N, unlimited or SOFT:HARD`);
    out.push(line(`lxc.prlimit.${name}`, value));
  }
  for (const [k, v] of byKey(spec.environment)) {
    if (k === '' || k.includes('='))
      throw new Error(`environment variable name ${JSON.stringify(k)} is empty or contains "="`);
    out.push(line('lxc.environment', `${k}=${v}`));
  }
  out.push(...nicLines(spec.nics ?? []));
  const disks = [...(spec.disks ?? [])].sort(
    (a, b) =>
      depth(a.target) - depth(b.target) ||
      (norm(a.target) < norm(b.target) ? -1 : norm(a.target) > norm(b.target) ? 1 : 0),
  );
  out.push(...disks.map(diskLine));
  out.push(...unixDeviceLines(spec.cgroupVersion, spec.unixDevices ?? []));
  return `${out.join('\n')}\n`;
}
