import type { DbOrTx } from '../../db/types.ts';
import { readManagedNetwork } from '../../desired/network-nics.ts';
import { TerminalError } from '../runtime/index.ts';
import type { LxcNic } from '../../host/lxc/types.ts';
import type { HostDevicesAdapter, LxcNicsAdapter } from '../adapters.ts';
import { nicsOf, type NicSpec } from './device-specs.ts';

/** A nic resolved for this host: on a managed network (`managed`: its name = the bridge), or on an existing host bridge. */
export interface ResolvedNic extends NicSpec {
  managed: boolean;
}

/**
 * The container's NICs. macvlan and physical: on their parent host interface (checked by the API); p2p: a veth left alone on the
 * host; physical: checked where it is moved in (its parent is not on the host while the container
 * runs); sriov: refused naming what the parent lacks. bridged: a veth whose host side joins a bridge (`parent`, or `network`): a managed
 * network's (its readiness is checked before a start: ensure-network-nics.ts), or an existing host
 * bridge. The API cannot look at the host, so a host parent that is missing or not a bridge is refused
 * here, at start, as a TerminalError naming the device and the bridge (the container is left as it was).
 */
export async function resolveNics(
  db: DbOrTx,
  devices: Record<string, Record<string, string>>,
  containerId: string,
  config: Record<string, string>,
  host: Pick<HostDevicesAdapter, 'hostLink' | 'sriov'>,
): Promise<ResolvedNic[]> {
  const nics = nicsOf(devices, containerId, config);
  const seen = new Map<string, string>();
  const out: ResolvedNic[] = [];
  for (const nic of nics) {
    const { device, name, parent } = nic;
    const other = seen.get(name);
    if (other !== undefined)
      throw new TerminalError(`nic "${device}": interface name "${name}" is already used by nic "${other}"`);
    seen.set(name, device);
    // The API refuses it (checkNicFeatures); a row written before that still does not start half-made.
    if (devices[device]!.vlan !== undefined)
      throw new TerminalError(`nic "${device}": "vlan" is not supported by svcd`);
    if (nic.nictype === 'p2p') {
      out.push({ ...nic, managed: false });
      continue;
    }
    if (nic.nictype === 'sriov') {
      const r = await host.sriov(parent);
      throw new TerminalError(
        `nic "${device}": nictype=sriov ${r.ok ? `is not supported by svcd yet (parent "${parent}" has virtual functions, but svcd does not allot them)` : `is not available on parent "${parent}": ${r.missing}`}`,
      );
    }
    if (!parent) throw new TerminalError(`nic "${device}": no "parent" bridge or "network"`);
    // The API checked the parent host interface; a physical one is inside the container while it runs,
    // so one gone since is named by LXC's start (or the live attach) failing.
    if (nic.nictype === 'physical' || nic.nictype === 'macvlan') {
      out.push({ ...nic, managed: false });
      continue;
    }
    if (await readManagedNetwork(db, parent)) {
      out.push({ ...nic, managed: true });
      continue;
    }
    if (nic.ipv4 || nic.ipv6)
      throw new TerminalError(`nic "${device}": a static address needs a managed network; "${parent}" is not one`);
    const kind = await host.hostLink(parent);
    if (kind === undefined)
      throw new TerminalError(
        `nic "${device}": host bridge "${parent}" does not exist (create it, e.g. "ip link add ${parent} type bridge", or change "parent")`,
      );
    if (kind !== 'bridge')
      throw new TerminalError(
        `nic "${device}": host interface "${parent}" is not a bridge (only nictype=bridged on a bridge or a managed network is supported)`,
      );
    out.push({ ...nic, managed: false });
  }
  return out;
}

/** The LXC part of resolved nics (lxc.net.N). */
export const lxcNicsOf = (nics: readonly ResolvedNic[]): LxcNic[] =>
  nics.map(({ nictype, name, parent, hwaddr, mtu, hostName }) => ({
    type: LXC_TYPE[nictype],
    name,
    parent,
    hwaddr,
    hostName,
    ...(mtu !== undefined ? { mtu } : {}),
  }));
const LXC_TYPE = { bridged: 'veth', p2p: 'veth', macvlan: 'macvlan', physical: 'phys', sriov: 'phys' } as const;

/**
 * Just before a start: the host interfaces macvlan and physical nics need are there (the API checked
 * them at the write; one gone since is named here, not by LXC's start failing).
 */
export async function requireNicParents(
  nics: readonly ResolvedNic[],
  host: Pick<LxcNicsAdapter, 'hostHasLink'>,
): Promise<void> {
  for (const n of nics)
    if ((n.nictype === 'macvlan' || n.nictype === 'physical') && !(await host.hostHasLink(n.parent)))
      throw new TerminalError(
        `nic "${n.device}": host interface "${n.parent}" (the ${n.nictype} nic's parent) does not exist`,
      );
}
