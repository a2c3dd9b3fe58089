/**
 * A container's log directory is named after it (`logs/<project>_<name>`: the API lists the logs of
 * a deleted container by name), so it follows a rename: the directory its facts name is moved to the
 * new name. A running container's LXC keeps writing to it through the files it has open. What a
 * deleted container of the new name left there goes to the trash first.
 */
import path from 'node:path';
import { logDirOf, stateTrashOf } from '../../host/layout.ts';
import type { Trash } from '../../host/storage/trash.ts';
import type { ContainerFilesAdapter } from '../adapters.ts';

export interface LogDirFacts {
  /** The name of the log directory (under `<stateDir>/logs`) its logs are in. */
  logDir?: string;
}

/** Returns whether the facts changed (the caller notes them). Idempotent: a crash after the move redoes nothing. */
export async function followLogDir(
  stateDir: string,
  c: { project: string; name: string },
  facts: LogDirFacts,
  trash: Trash,
  files: Pick<ContainerFilesAdapter, 'exists' | 'rename'>,
): Promise<boolean> {
  const to = logDirOf(stateDir, c);
  const name = path.basename(to);
  if (facts.logDir === name) return false;
  const from = facts.logDir ? path.join(path.dirname(to), facts.logDir) : undefined;
  if (from && files.exists(from)) {
    if (files.exists(to)) await trash.discard(to, stateTrashOf(stateDir));
    await files.rename(from, to);
  }
  facts.logDir = name;
  return true;
}
