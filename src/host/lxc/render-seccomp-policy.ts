import { parseBool } from '../../util/parse-bool.ts';

/** What the container's seccomp policy must do, from the `security.syscalls.*` keys (`seccompConfigFromKeys`). */
export interface SeccompConfig {
  /** `security.syscalls.blacklist_default` (LXD default true): deny module loading, kexec, open_by_handle_at, `umount -f`. */
  denyDefault: boolean;
  /** `security.syscalls.blacklist_compat`: deny the 32-bit compat entry points with a history of bugs (x86_64 hosts). */
  denyCompat: boolean;
  /** Architecture section the compat rules go in (LXC's name, e.g. `x86_64`); needed when `denyCompat`. */
  architecture?: string;
  /** `security.syscalls.blacklist` lines in LXC syntax, verbatim (`name` or `name errno N`). */
  deny: string[];
  /** `security.syscalls.whitelist` lines: an allowlist policy; excludes every deny setting. */
  allow: string[];
}

const DEFAULT_DENY = `reject_force_umount  # comment this to allow umount -f;  not recommended
[all]
kexec_load errno 38
open_by_handle_at errno 38
init_module errno 38
finit_module errno 38
delete_module errno 38
`;

/** LXD's list of compat syscalls to refuse (ENOSYS) when 32-bit compat is denied. */
const COMPAT_DENY = [
  'compat_sys_rt_sigaction',
  'stub_x32_rt_sigreturn',
  'compat_sys_ioctl',
  'compat_sys_readv',
  'compat_sys_writev',
  'compat_sys_recvfrom',
  'compat_sys_sendmsg',
  'compat_sys_recvmsg',
  'stub_x32_execve',
  'compat_sys_ptrace',
  'compat_sys_rt_sigpending',
  'compat_sys_rt_sigtimedwait',
  'compat_sys_rt_sigqueueinfo',
  'compat_sys_sigaltstack',
  'compat_sys_timer_create',
  'compat_sys_mq_notify',
  'compat_sys_kexec_load',
  'compat_sys_waitid',
  'compat_sys_set_robust_list',
  'compat_sys_get_robust_list',
  'compat_sys_vmsplice',
  'compat_sys_move_pages',
  'compat_sys_preadv64',
  'compat_sys_pwritev64',
  'compat_sys_rt_tgsigqueueinfo',
  'compat_sys_recvmmsg',
  'compat_sys_sendmmsg',
  'compat_sys_process_vm_readv',
  'compat_sys_process_vm_writev',
  'compat_sys_setsockopt',
  'compat_sys_getsockopt',
  'compat_sys_io_setup',
  'compat_sys_io_submit',
  'stub_x32_execveat',
];

const lines = (v: string | undefined) =>
  (v ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
const isTrue = (v: string | undefined) => parseBool(v);

/** The seccomp settings of an expanded instance config (LXD key names and defaults). */
export function seccompConfigFromKeys(
  config: Readonly<Record<string, string | undefined>>,
  architecture?: string,
): SeccompConfig {
  const denyDefault = config['security.syscalls.blacklist_default'];
  return {
    denyDefault: denyDefault === undefined || denyDefault === '' || isTrue(denyDefault),
    denyCompat: isTrue(config['security.syscalls.blacklist_compat']),
    ...(architecture ? { architecture } : {}),
    deny: lines(config['security.syscalls.blacklist']),
    allow: lines(config['security.syscalls.whitelist']),
  };
}

/**
 * The text of an LXC seccomp policy file (version 2) for `config`, or undefined when the container
 * needs none (then LXC's common.seccomp from common.conf still applies). Pure; throws on contradictory
 * settings. Deny rules answer ENOSYS (38) like LXD's, so userspace falls back instead of failing hard.
 */
export function renderSeccompPolicy(config: SeccompConfig): string | undefined {
  for (const l of [...config.deny, ...config.allow]) {
    if (/[\r\n\0]/.test(l)) throw new Error(`seccomp rule ${JSON.stringify(l)} contains a line break`);
  }
  if (config.allow.length > 0) {
    if (config.deny.length > 0 || config.denyCompat) {
      throw new Error(
        'security.syscalls.whitelist cannot be combined with security.syscalls.blacklist or blacklist_compat',
      );
    }
    return `2\nallowlist\n[all]\n${config.allow.join('\n')}\n`;
  }
  if (!config.denyDefault && !config.denyCompat && config.deny.length === 0) return undefined;
  let policy = '2\ndenylist\n';
  if (config.denyDefault) policy += DEFAULT_DENY;
  if (config.deny.length > 0) policy += `${config.denyDefault ? '' : '[all]\n'}${config.deny.join('\n')}\n`;
  if (config.denyCompat) {
    if (!config.architecture) throw new Error('security.syscalls.blacklist_compat needs the container architecture');
    policy += `[${config.architecture}]\n${COMPAT_DENY.map((s) => `${s} errno 38`).join('\n')}\n`;
  }
  return policy;
}
