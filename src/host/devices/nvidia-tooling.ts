/**
 * The NVIDIA container tooling that `nvidia.runtime=true` (gpu_runtime) needs, as LXD needs it: LXC's
 * `nvidia` mount hook (Debian's lxc package ships it in /usr/share/lxc/hooks; SVCD_LXC_HOOKS names another
 * directory) and the `nvidia-container-cli` it runs, on PATH. Looked at each time (a few stats): the tooling
 * may be installed or removed while svcd runs.
 */
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_SEARCH_PATH } from '../storage/host-checker.ts';

const isExecutable = (p: string): boolean => {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/** The hook to run at a start, or what this host lacks for it. */
export function findNvidiaTooling(env: NodeJS.ProcessEnv = process.env): { hook: string } | { missing: string } {
  const hook = path.join(env.SVCD_LXC_HOOKS || '/usr/share/lxc/hooks', 'nvidia');
  if (!isExecutable(hook)) return { missing: `LXC's NVIDIA hook ${hook} is missing` };
  // The daemon's PATH, not HostChecker's fixed one: LXC's hook looks the tool up on the PATH lxc-start inherits.
  const dirs = env.PATH ? env.PATH.split(':').filter(Boolean) : DEFAULT_SEARCH_PATH;
  if (!dirs.some((d) => isExecutable(path.join(d, 'nvidia-container-cli'))))
    return {
      missing: 'nvidia-container-cli is not installed (the NVIDIA container tooling: libnvidia-container-tools)',
    };
  return { hook };
}
