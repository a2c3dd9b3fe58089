import { readdirSync } from 'node:fs';
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { ensureDeviceNode } from '../../host/devices/ensure-device-node.ts';
import { readDeviceNode } from '../../host/devices/read-device-node.ts';
import type { Idmap } from '../../host/idmap/types.ts';
import type { LxcUnixDevice } from '../../host/lxc/types.ts';
import { TerminalError } from '../runtime/index.ts';
import { deviceNodeFileName, hostIdOf, type UnixDeviceRequest } from './device-specs.ts';

const what = (r: UnixDeviceRequest) => `unix-${r.type} "${r.device}"`;

/** Major/minor of a request: as given, else from the host node `source`; undefined when it may be skipped. */
async function numbersOf(r: UnixDeviceRequest, mustExist: boolean): Promise<{ major: number; minor: number } | undefined> {
  if (r.major !== undefined && r.minor !== undefined) return { major: r.major, minor: r.minor };
  const node = await readDeviceNode(r.source);
  if (!node) {
    if (!r.required || !mustExist) return undefined;
    throw new TerminalError(`${what(r)}: host device node "${r.source}" does not exist (set required=false to skip it, or give major and minor)`);
  }
  if (node.type === 'other') throw new TerminalError(`${what(r)}: host path "${r.source}" is not a device node`);
  if (node.type !== r.type) throw new TerminalError(`${what(r)}: host node "${r.source}" is a ${node.type} device, not a ${r.type} device`);
  return { major: r.major ?? node.major, minor: r.minor ?? node.minor };
}

/**
 * The container's unix-char/unix-block devices, LXD-style: svcd creates each node itself in the
 * container's devices directory (`dir`) with the requested major/minor, mode and owner (uid/gid
 * inside, mapped through the idmap), and LXC bind-mounts it to `path` and allows it in the device
 * cgroup. Nodes of devices no longer wanted are removed. A missing host node is a TerminalError
 * unless the device has `required=false` (then it is skipped), or the container is to stay stopped
 * (`mustExist` false: the node is looked for again at its start).
 */
export async function ensureUnixDevices(input: { dir: string; requests: readonly UnixDeviceRequest[]; idmap: Idmap; mustExist?: boolean; signal?: AbortSignal | undefined }): Promise<(LxcUnixDevice & { device: string })[]> {
  const { dir, requests, idmap } = input;
  const out: (LxcUnixDevice & { device: string })[] = [];
  const keep = new Set<string>();
  if (requests.length > 0) {
    await mkdir(dir, { recursive: true, mode: 0o711 });
    await chmod(dir, 0o711);
  }
  for (const r of requests) {
    const numbers = await numbersOf(r, input.mustExist ?? true);
    if (!numbers) continue;
    const uid = hostIdOf(idmap.uid, r.uid);
    const gid = hostIdOf(idmap.gid, r.gid);
    if (uid === undefined) throw new TerminalError(`${what(r)}: uid ${r.uid} is not mapped in the container`);
    if (gid === undefined) throw new TerminalError(`${what(r)}: gid ${r.gid} is not mapped in the container`);
    const file = deviceNodeFileName(r.device);
    const node = path.join(dir, file);
    await ensureDeviceNode({ path: node, type: r.type, ...numbers, mode: r.mode, uid, gid }, input.signal);
    keep.add(file);
    out.push({ device: r.device, type: r.type, source: node, target: r.target, ...numbers });
  }
  let files: string[] = [];
  try {
    files = readdirSync(dir);
  } catch {
    // no directory: nothing to remove
  }
  for (const f of files) {
    if (f.startsWith('unix.') && !keep.has(f)) await rm(path.join(dir, f), { force: true });
  }
  return out;
}
