import { readHostLink } from '../../host/devices/read-host-link.ts';
import type { LxcNic } from '../../host/lxc/types.ts';
import { TerminalError } from '../runtime/index.ts';
import { nicsOf } from './device-specs.ts';

/**
 * The container's NICs: each a veth whose host side joins an existing host bridge (`parent`). The API
 * cannot look at the host, so a parent that is missing or not a bridge is refused here, at start, as
 * a TerminalError naming the device and the bridge (the container is left as it was).
 */
export async function resolveNics(devices: Record<string, Record<string, string>>, containerId: string): Promise<LxcNic[]> {
  const nics = nicsOf(devices, containerId);
  const seen = new Map<string, string>();
  for (const { device, name, parent } of nics) {
    const other = seen.get(name);
    if (other !== undefined) throw new TerminalError(`nic "${device}": interface name "${name}" is already used by nic "${other}"`);
    seen.set(name, device);
    if (!parent) throw new TerminalError(`nic "${device}": no "parent" bridge (managed networks are not supported yet; use nictype=bridged with parent=<host bridge>)`);
    const kind = await readHostLink(parent);
    if (kind === undefined) throw new TerminalError(`nic "${device}": host bridge "${parent}" does not exist (create it, e.g. "ip link add ${parent} type bridge", or change "parent")`);
    if (kind !== 'bridge') throw new TerminalError(`nic "${device}": host interface "${parent}" is not a bridge (only nictype=bridged on an existing bridge is supported)`);
  }
  return nics.map(({ device: _device, ...nic }) => nic);
}
