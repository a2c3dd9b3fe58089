import { rm } from 'node:fs/promises';
import { renderSeccompPolicy, seccompConfigFromKeys } from '../../host/lxc/render-seccomp-policy.ts';
import { TerminalError } from '../runtime/index.ts';
import { writeFileIfChanged } from './write-file-if-changed.ts';

/**
 * The container's seccomp policy from its `security.syscalls.*` keys (LXD defaults: the default
 * deny list is on) is written to `file`, and its path returned for `lxc.seccomp.profile`; when the keys
 * ask for no policy at all the file is removed and LXC's common.seccomp (from common.conf) applies.
 */
export async function ensureSeccompProfile(
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
    await rm(file, { force: true });
    return undefined;
  }
  await writeFileIfChanged(file, policy, 0o644);
  return file;
}
