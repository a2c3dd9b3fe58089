import { renderSeccompPolicy, seccompConfigFromKeys } from '../../host/lxc/render-seccomp-policy.ts';
import { TerminalError } from '../runtime/index.ts';
import type { ContainerFilesAdapter } from '../adapters.ts';

/**
 * The container's seccomp policy from its `security.syscalls.*` keys (LXD defaults: the default
 * deny list is on) is written to `file`, and its path returned for `lxc.seccomp.profile`; when the keys
 * ask for no policy at all the file is removed and LXC's common.seccomp (from common.conf) applies.
 */
export async function ensureSeccompProfile(
  files: ContainerFilesAdapter,
  file: string,
  config: Record<string, string>,
  architecture: string,
): Promise<string | undefined> {
  let policy: string | undefined;
  try {
    policy = renderSeccompPolicy(seccompConfigFromKeys(config, architecture));
  } catch (e) {
    throw new TerminalError(`seccomp: ${(e as Error).message}`);
  }
  if (policy === undefined) {
    await files.remove(file);
    return undefined;
  }
  await files.writeIfChanged(file, policy, 0o644);
  return file;
}
