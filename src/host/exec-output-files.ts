import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/** `exec_<operation id>.stdout` / `.stderr`, as exec's record-output names them. */
const EXEC_OUTPUT = /^exec_[0-9a-f-]+\.(stdout|stderr)$/;

/**
 * Remove recorded exec output older than `maxAgeMs` (by modification time: the last write) from every
 * container's log directory under `logsDir`; returns the removed paths. Only regular files with exec
 * output names are touched; a symlink is never followed.
 */
export async function removeOldExecOutput(logsDir: string, nowMs: number, maxAgeMs: number): Promise<string[]> {
  const removed: string[] = [];
  const dirs = await readdir(logsDir, { withFileTypes: true }).catch(() => []);
  for (const d of dirs) {
    if (!d.isDirectory()) continue;
    const dir = path.join(logsDir, d.name);
    for (const f of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (!f.isFile() || !EXEC_OUTPUT.test(f.name)) continue;
      const file = path.join(dir, f.name);
      const st = await stat(file).catch(() => undefined);
      if (!st || nowMs - st.mtimeMs <= maxAgeMs) continue;
      await rm(file, { force: true });
      removed.push(file);
    }
  }
  return removed;
}
