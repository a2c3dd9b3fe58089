import path from 'node:path';
import type { DeviceNodesAdapter } from '../adapters.ts';
import type { Idmap } from '../../host/idmap/types.ts';
import type { LxcUnixDevice } from '../../host/lxc/types.ts';
import { TerminalError } from '../runtime/index.ts';
import { deviceNodeFileName, hostIdOf, type UnixDeviceRequest } from './device-specs.ts';

const what = (r: UnixDeviceRequest) => `unix-${r.type} "${r.device}"`;

/** Major/minor of a request: as given, else from the host node `source`; undefined when it may be skipped. */
async function numbersOf(
  nodes: DeviceNodesAdapter,
  r: UnixDeviceRequest,
  mustExist: boolean,
): Promise<{ major: number; minor: number } | undefined> {
  if (r.major !== undefined && r.minor !== undefined) return { major: r.major, minor: r.minor };
  const node = await nodes.read(r.source);
  if (!node) {
    if (!r.required || !mustExist) return undefined;
    throw new TerminalError(
      `${what(r)}: host device node "${r.source}" does not exist (set required=false to skip it, or give major and minor)`,
    );
  }
  if (node.type === 'other') throw new TerminalError(`${what(r)}: host path "${r.source}" is not a device node`);
  if (node.type !== r.type)
    throw new TerminalError(`${what(r)}: host node "${r.source}" is a ${node.type} device, not a ${r.type} device`);
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
export async function ensureUnixDevices(input: {
  nodes: DeviceNodesAdapter;
  dir: string;
  requests: readonly UnixDeviceRequest[];
  idmap: Idmap;
  mustExist?: boolean;
  signal?: AbortSignal | undefined;
}): Promise<(LxcUnixDevice & { device: string })[]> {
  const { nodes, dir, requests, idmap } = input;
  const out: (LxcUnixDevice & { device: string })[] = [];
  const keep = new Set<string>();
  if (requests.length > 0) {
    await nodes.ensureDir(dir, 0o711);
  }
  for (const r of requests) {
    const numbers = await numbersOf(nodes, r, input.mustExist ?? true);
    if (!numbers) continue;
    const uid = hostIdOf(idmap.uid, r.uid);
    const gid = hostIdOf(idmap.gid, r.gid);
    if (uid === undefined) throw new TerminalError(`${what(r)}: uid ${r.uid} is not mapped in the container`);
    if (gid === undefined) throw new TerminalError(`${what(r)}: gid ${r.gid} is not mapped in the container`);
    const file = deviceNodeFileName(r.device);
    const node = path.join(dir, file);
    await nodes.ensure({ path: node, type: r.type, ...numbers, mode: r.mode, uid, gid }, input.signal);
    keep.add(file);
    out.push({ device: r.device, type: r.type, source: node, target: r.target, ...numbers });
  }
  for (const f of await nodes.list(dir)) {
    if (f.startsWith('unix.') && !keep.has(f)) await nodes.remove(path.join(dir, f));
  }
  return out;
}
