/** Run a file operation on a container path resolved in-root (its parent directory open), closing it after. */
import { HostInputError } from '../errors.ts';
import { resolveParent, type Resolved } from './resolve-in-root.ts';
import type { ContainerFs } from './views.ts';

export function withResolved<T>(fsys: ContainerFs, path: string, f: (r: Resolved) => T): T {
  const r = resolveParent(fsys.main.root, path, fsys.main.guard);
  try {
    return f(r);
  } finally {
    r.close();
  }
}

export async function withResolvedAsync<T>(
  fsys: ContainerFs,
  path: string,
  f: (r: Resolved) => Promise<T>,
): Promise<T> {
  const r = resolveParent(fsys.main.root, path, fsys.main.guard);
  try {
    return await f(r);
  } finally {
    r.close();
  }
}

/** The final component's name; refused when the path names a directory through "/", "." or "..". */
export function finalName(path: string, r: Resolved): string {
  if (r.name === undefined) throw new HostInputError(`Path "${path}" names a directory`);
  return r.name;
}
