import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { cgroupDir, cgroupMountsFrom, containerCgroupPath, parseProcCgroup } from '../../src/host/lxc/parse-cgroup.ts';
import { readMounts } from '../../src/host/storage/mountinfo.ts';

/** A cgroup file of the container whose init is `pid`: `v1File` under the v1 `controller`, else `v2File` on the unified hierarchy. */
export async function cgroupFile(pid: number, controller: string, v1File: string, v2File: string): Promise<string> {
  const proc = parseProcCgroup(await readFile(`/proc/${pid}/cgroup`, 'utf8'));
  const mounts = cgroupMountsFrom(await readMounts());
  const v1 = mounts.v1.get(controller);
  const p1 = proc.v1.get(controller);
  if (v1 && p1 !== undefined)
    return (await readFile(path.join(cgroupDir(v1, containerCgroupPath(p1))!, v1File), 'utf8')).trim();
  return (await readFile(path.join(cgroupDir(mounts.v2!, containerCgroupPath(proc.v2!))!, v2File), 'utf8')).trim();
}
