import { isAny, isBool, isInt, isSize, isSizeOrPercent, isUint, oneOf, type KeyTable, type ValueCheck } from './config-keys.ts';

const cpuLimit: ValueCheck = (v) =>
  /^\d+$/.test(v) || /^(\d+(-\d+)?)(,\d+(-\d+)?)*$/.test(v) ? undefined : 'must be a CPU count or a CPU set such as 0-3,6';
const rawIdmap: ValueCheck = (v) => {
  for (const line of v.split('\n').map((l) => l.trim()).filter(Boolean)) {
    if (!/^(uid|gid|both) \d+(-\d+)? \d+(-\d+)?$/.test(line)) return `bad line "${line}" (want "uid|gid|both HOSTID[-RANGE] CONTAINERID[-RANGE]")`;
  }
  return undefined;
};
const kernelLimit: ValueCheck = (v) => (/^(unlimited|\d+)(:(unlimited|\d+))?$/.test(v) ? undefined : 'must be N, unlimited or SOFT:HARD');

/**
 * Container (and profile) config keys svcd understands. Anything else is refused with 400, so a
 * typo never silently does nothing.
 */
export const instanceConfigKeys: KeyTable = {
  exact: {
    'boot.autostart': isBool,
    'boot.autostart.delay': isUint,
    'boot.autostart.priority': isInt,
    'boot.host_shutdown_timeout': isUint,
    'boot.stop.priority': isInt,
    'limits.cpu': cpuLimit,
    'limits.memory': isSizeOrPercent,
    'limits.memory.swap': isBool,
    'limits.processes': isUint,
    'security.privileged': isBool,
    'security.idmap.isolated': isBool,
    'security.idmap.size': isUint,
    'security.idmap.base': isUint,
    'security.protection.delete': isBool,
    'security.devsvc': isBool,
    'security.syscalls.blacklist_default': isBool,
    'security.syscalls.blacklist_compat': isBool,
    'security.syscalls.blacklist': isAny,
    'security.syscalls.whitelist': isAny,
    'raw.id_map': rawIdmap,
    'image.architecture': isAny,
    'image.description': isAny,
    'image.os': isAny,
    'image.release': isAny,
    'images.compression_algorithm': oneOf('none', 'gzip', 'bzip2', 'xz', 'zstd', 'lzma'),
  },
  prefixes: {
    'user.': isAny,
    'environment.': isAny,
    'limits.kernel.': kernelLimit,
    'image.': isAny,
  },
  readOnlyPrefixes: ['volatile.'],
};

export { isSize };
