import { existsSync } from 'node:fs';
import { readdir, chmod, mkdir, rm } from 'node:fs/promises';
import type { DeviceNodesAdapter } from '../../reconcilers/adapters.ts';
import { ensureDeviceNode } from './ensure-device-node.ts';
import { readDeviceNode } from './read-device-node.ts';

/** The real device nodes: stat, mknod(1) and the devices directory on the host's filesystem. */
export function createDeviceNodesAdapter(): DeviceNodesAdapter {
  return {
    read: readDeviceNode,
    ensure: ensureDeviceNode,
    async ensureDir(dir, mode) {
      await mkdir(dir, { recursive: true, mode });
      // mkdir's mode is masked by the umask; the directory must be exactly this
      await chmod(dir, mode);
    },
    async list(dir) {
      // Most containers have no devices directory: a look first, not a rejection (an error built each start).
      return existsSync(dir) ? readdir(dir).catch(() => []) : [];
    },
    async remove(p) {
      await rm(p, { force: true });
    },
  };
}
