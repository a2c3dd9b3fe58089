import { isAny, isBool, isInt, isSize, isUint, oneOf, type KeyTable, type ValueCheck } from './config-keys.ts';
import { parseBool } from '../util/parse-bool.ts';
import { IdmapError } from '../util/idmap-error.ts';
import { findNvidiaTooling } from '../host/devices/nvidia-tooling.ts';
import { parseRawIdmap } from '../util/parse-raw-idmap.ts';
import { parseSize } from '../util/size.ts';

const cpuLimit: ValueCheck = (v) => {
  if (/^\d+$/.test(v)) return Number(v) >= 1 ? undefined : 'a CPU count must be at least 1';
  if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(v)) return 'must be a CPU count or a CPU set such as 0-3,6';
  for (const part of v.split(',')) {
    const [a, b] = part.split('-').map(Number);
    if (b !== undefined && b < a!) return `CPU range "${part}" ends before it starts`;
  }
  return undefined;
};

const memoryLimit: ValueCheck = (v) => {
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(v);
  if (pct)
    return Number(pct[1]) > 0 && Number(pct[1]) <= 100 ? undefined : 'a percentage must be above 0 and at most 100';
  const bad = isSize(v);
  if (bad) return `${bad}, or a percentage of the host's memory such as 50%`;
  return parseSize(v) > 0 ? undefined : 'must be above 0';
};

const positive =
  (max = 2 ** 32 - 1): ValueCheck =>
  (v) =>
    /^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= max ? undefined : `must be an integer from 1 to ${max}`;

const rawIdmap: ValueCheck = (v) => {
  try {
    parseRawIdmap(v);
    return undefined;
  } catch (e) {
    if (e instanceof IdmapError) return e.message.replace(/^raw\.id_map: /, '');
    throw e;
  }
};

/** `limits.kernel.<name>`: the resources LXC's `lxc.prlimit.<name>` knows (RLIMIT_<NAME>, lower case). */
export const KERNEL_LIMITS = [
  'as',
  'core',
  'cpu',
  'data',
  'fsize',
  'locks',
  'memlock',
  'msgqueue',
  'nice',
  'nofile',
  'nproc',
  'rss',
  'rtprio',
  'rttime',
  'sigpending',
  'stack',
];

const kernelLimit: ValueCheck = (v) => {
  const m = /^(unlimited|\d+)(?::(unlimited|\d+))?$/.exec(v);
  if (!m) return 'must be N, unlimited or SOFT:HARD';
  const n = (x: string) => (x === 'unlimited' ? Infinity : Number(x));
  if (m[2] !== undefined && n(m[1]!) > n(m[2])) return 'the soft limit must not exceed the hard limit';
  return undefined;
};

/** `security.syscalls.blacklist`/`whitelist`: LXC seccomp rule lines, each starting with a syscall name. */
const syscallRules: ValueCheck = (v) => {
  if (/[\r\0]/.test(v)) return 'must not contain carriage returns or NUL';
  for (const raw of v.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (!/^[a-z_][a-z0-9_]*(\s.*)?$/.test(line))
      return `bad rule "${line}" (want one rule per line starting with a syscall name, e.g. "mount errno 1")`;
  }
  return undefined;
};

const environmentValue: ValueCheck = (v) => (/[\n\r\0]/.test(v) ? 'must not contain line breaks or NUL' : undefined);

function crossCheck(c: Record<string, string>): string | undefined {
  for (const key of Object.keys(c)) {
    if (key.startsWith('environment.') && /[=\s\0]/.test(key.slice('environment.'.length)))
      return `environment variable name in "${key}" must not contain "=", spaces or NUL`;
    if (key.startsWith('limits.kernel.') && !KERNEL_LIMITS.includes(key.slice('limits.kernel.'.length)))
      return `unknown kernel limit "${key}" (known: ${KERNEL_LIMITS.join(', ')})`;
  }
  const allow = (c['security.syscalls.whitelist'] ?? '').trim() !== '';
  const deny =
    (c['security.syscalls.blacklist'] ?? '').trim() !== '' || parseBool(c['security.syscalls.blacklist_compat']);
  if (allow && deny)
    return 'security.syscalls.whitelist cannot be combined with security.syscalls.blacklist or security.syscalls.blacklist_compat';
  return undefined;
}

/** nvidia.runtime=true needs the NVIDIA container tooling on this host (checked again at each start). */
const nvidiaRuntime: ValueCheck = (v) => {
  const bad = isBool(v);
  if (bad || !parseBool(v)) return bad;
  const tooling = findNvidiaTooling();
  return 'missing' in tooling
    ? `needs the NVIDIA container tooling, which this host lacks: ${tooling.missing}`
    : undefined;
};
/** NVIDIA_DRIVER_CAPABILITIES: `all`, or a comma-separated list of the driver's capabilities. */
const NVIDIA_CAPABILITIES = ['compute', 'compat32', 'graphics', 'utility', 'video', 'display'];
const nvidiaCapabilities: ValueCheck = (v) =>
  v === 'all' || (v !== '' && v.split(',').every((c) => NVIDIA_CAPABILITIES.includes(c)))
    ? undefined
    : `must be "all" or a comma-separated list of ${NVIDIA_CAPABILITIES.join(', ')}`;

/**
 * Container (and profile) config keys svcd understands. Anything else is refused with 400, so a
 * typo never silently does nothing; values that LXC or the kernel would refuse at start are refused
 * here already where that needs no host facts (idmap ranges against /etc/subuid are checked at start;
 * nvidia.runtime=true looks for the NVIDIA tooling, a few stats).
 */
export const instanceConfigKeys: KeyTable = {
  exact: {
    'boot.autostart': isBool,
    'boot.autostart.delay': isUint,
    'boot.autostart.priority': isInt,
    'boot.host_shutdown_timeout': isUint,
    'boot.stop.priority': isInt,
    'limits.cpu': cpuLimit,
    'limits.memory': memoryLimit,
    'limits.memory.swap': isBool,
    'limits.processes': positive(),
    'security.privileged': isBool,
    'security.idmap.isolated': isBool,
    'security.idmap.size': positive(),
    'security.idmap.base': isUint,
    'security.protection.delete': isBool,
    'security.devsvc': isBool,
    'security.devsvc.images': isBool,
    'security.syscalls.blacklist_default': isBool,
    'security.syscalls.blacklist_compat': isBool,
    'security.syscalls.blacklist': syscallRules,
    'security.syscalls.whitelist': syscallRules,
    'raw.id_map': rawIdmap,
    'image.architecture': isAny,
    'image.description': isAny,
    'image.os': isAny,
    'image.release': isAny,
    'images.compression_algorithm': oneOf('none', 'gzip', 'bzip2', 'xz', 'zstd', 'lzma'),
    // gpu_runtime, gpu_runtime_config (lxc-spec.ts: LXC's nvidia hook and its environment).
    'nvidia.runtime': nvidiaRuntime,
    'nvidia.driver.capabilities': nvidiaCapabilities,
    'nvidia.require.cuda': isAny,
    'nvidia.require.driver': isAny,
  },
  prefixes: {
    'user.': isAny,
    'environment.': environmentValue,
    'limits.kernel.': kernelLimit,
    'image.': isAny,
  },
  readOnlyPrefixes: ['volatile.'],
  crossCheck,
};

export { isSize };
