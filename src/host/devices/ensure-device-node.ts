import { chown, lstat, rename, rm } from 'node:fs/promises';
import { runCommand } from '../exec.ts';
import { splitDevT } from './read-device-node.ts';

export interface DeviceNodeSpec {
  /** Absolute host path of the node to create. */
  path: string;
  type: 'char' | 'block';
  major: number;
  minor: number;
  /** Permission bits (0660). */
  mode: number;
  /** Host uid and gid of the node (already mapped through the container's idmap). */
  uid: number;
  gid: number;
}

async function matches(spec: DeviceNodeSpec): Promise<boolean> {
  const st = await lstat(spec.path, { bigint: true }).catch(() => undefined);
  if (!st) return false;
  if (spec.type === 'char' ? !st.isCharacterDevice() : !st.isBlockDevice()) return false;
  const dev = splitDevT(st.rdev);
  return (
    dev.major === spec.major &&
    dev.minor === spec.minor &&
    Number(st.mode & 0o7777n) === spec.mode &&
    Number(st.uid) === spec.uid &&
    Number(st.gid) === spec.gid
  );
}

/**
 * A device node with exactly these attributes exists at `spec.path` (created with mknod(1) next to
 * it and renamed into place, so a running container's bind of the old node is never disturbed).
 */
export async function ensureDeviceNode(spec: DeviceNodeSpec, signal?: AbortSignal): Promise<void> {
  if (await matches(spec)) return;
  const tmp = `${spec.path}.new`;
  await rm(tmp, { force: true });
  const mode = spec.mode.toString(8).padStart(4, '0');
  await runCommand(
    'mknod',
    ['-m', mode, tmp, spec.type === 'char' ? 'c' : 'b', String(spec.major), String(spec.minor)],
    { signal, timeoutMs: 10_000 },
  );
  try {
    await chown(tmp, spec.uid, spec.gid);
    await rename(tmp, spec.path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}
