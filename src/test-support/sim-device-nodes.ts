import path from 'node:path';
import type { DeviceNodeSpec } from '../host/devices/ensure-device-node.ts';
import type { HostNode } from '../host/devices/read-device-node.ts';
import type { DeviceNodesAdapter } from '../reconcilers/adapters.ts';

/**
 * In-memory device nodes for component tests: `host` is what the test says the host has (e.g.
 * /dev/fuse), `made` the nodes the reconciler made (path → spec), `dirs` the directories it made.
 */
export interface SimDeviceNodes extends DeviceNodesAdapter {
  host: Map<string, HostNode>;
  made: Map<string, DeviceNodeSpec>;
  dirs: Map<string, number>;
}

export function createSimDeviceNodes(host: Record<string, HostNode> = {}): SimDeviceNodes {
  const sim: SimDeviceNodes = {
    host: new Map(Object.entries(host)),
    made: new Map(),
    dirs: new Map(),
    async read(p) {
      const made = sim.made.get(p);
      return made ? { type: made.type, major: made.major, minor: made.minor } : sim.host.get(p);
    },
    async ensure(spec) {
      if (!sim.dirs.has(path.dirname(spec.path)))
        throw Object.assign(new Error(`ENOENT: ${path.dirname(spec.path)}`), { code: 'ENOENT' });
      sim.made.set(spec.path, { ...spec });
    },
    async ensureDir(dir, mode) {
      sim.dirs.set(dir, mode);
    },
    async list(dir) {
      return [...sim.made.keys()].filter((p) => path.dirname(p) === dir).map((p) => path.basename(p));
    },
    async remove(p) {
      sim.made.delete(p);
    },
  };
  return sim;
}
