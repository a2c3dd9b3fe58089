/**
 * A container's nics on managed networks, on the networks' side: before a start (or a live attach) the
 * network must be up, else a retryable error that blocks only this container (the network reconciler
 * enqueues its containers when it converges); each such nic has its DHCP host entry in the network's
 * dnsmasq hosts directory (name: the container's name; its static addresses), written when it changes,
 * and removed when the nic goes or the container is deleted. What was written is kept in the container's
 * facts, so a removal is found after an svcd restart too.
 */
import type { DbOrTx } from '../../db/types.ts';
import { networkReadiness, readManagedNetwork } from '../../desired/network-nics.ts';
import { networkDirOf } from '../../host/layout.ts';
import type { DhcpHostEntry } from '../../host/network/types.ts';
import type { NetworkAdapter } from '../adapters.ts';
import type { ResolvedNic } from './resolve-nics.ts';

/** One DHCP host entry svcd wrote for a nic: which network (name and id: a network made anew has none), and what. */
export interface DhcpHostRecord {
  network: string;
  networkId: string;
  entry: string;
}

export interface NetworkNicsFacts {
  /** `<container id>.<device>` → the entry written. */
  dhcpHosts?: Record<string, DhcpHostRecord> | undefined;
}

export interface NetworkNicsDeps {
  db: DbOrTx;
  stateDir: string;
  network?: Pick<NetworkAdapter, 'setDhcpHost'> | undefined;
}

/** Throws (retryable) when a managed network one of `nics` joins is not ready: "network X is not ready: <why>". */
export async function requireNetworksReady(
  db: DbOrTx,
  node: string,
  nics: readonly Pick<ResolvedNic, 'managed' | 'parent'>[],
): Promise<void> {
  for (const name of new Set(nics.filter((n) => n.managed).map((n) => n.parent))) {
    const r = await networkReadiness(db, name, node);
    if (!r.ready) throw new Error(`network "${name}" is not ready: ${r.why}`);
  }
}

/** Remove an entry, unless its network is gone (or made anew): its directory went with it. */
async function removeEntry(deps: NetworkNicsDeps, key: string, old: DhcpHostRecord): Promise<void> {
  if ((await readManagedNetwork(deps.db, old.network))?.id !== old.networkId) return;
  await deps.network!.setDhcpHost({ name: old.network, dir: networkDirOf(deps.stateDir, old.network) }, key, undefined);
}

export const dhcpHostKey = (containerId: string, device: string) => `${containerId}.${device}`;

/** Write the DHCP host entries of the container's managed nics and remove those of nics that went. Returns whether the facts changed. */
export async function ensureDhcpHosts(
  deps: NetworkNicsDeps,
  c: { id: string; name: string },
  nics: readonly ResolvedNic[],
  facts: NetworkNicsFacts,
): Promise<boolean> {
  if (!deps.network) return false;
  const had = facts.dhcpHosts ?? {};
  const next: Record<string, DhcpHostRecord> = {};
  let changed = false;
  for (const nic of nics) {
    if (!nic.managed) continue;
    const net = await readManagedNetwork(deps.db, nic.parent);
    if (!net) continue;
    const key = dhcpHostKey(c.id, nic.device);
    const entry: DhcpHostEntry = {
      hwaddr: nic.hwaddr,
      hostname: c.name,
      ...(nic.ipv4 ? { ipv4: nic.ipv4 } : {}),
      ...(nic.ipv6 ? { ipv6: nic.ipv6 } : {}),
    };
    const rec: DhcpHostRecord = { network: net.name, networkId: net.id, entry: JSON.stringify(entry) };
    const old = had[key];
    if (old && old.network !== rec.network) await removeEntry(deps, key, old);
    if (!old || old.network !== rec.network || old.networkId !== rec.networkId || old.entry !== rec.entry) {
      await deps.network.setDhcpHost({ name: net.name, dir: networkDirOf(deps.stateDir, net.name) }, key, entry);
      changed = true;
    }
    next[key] = rec;
  }
  for (const [key, old] of Object.entries(had)) {
    if (next[key]) continue;
    await removeEntry(deps, key, old);
    changed = true;
  }
  if (changed || Object.keys(had).length !== Object.keys(next).length) {
    if (Object.keys(next).length) facts.dhcpHosts = next;
    else delete facts.dhcpHosts;
    return true;
  }
  return false;
}

/** Remove every DHCP host entry the container has (it is being deleted). */
export async function removeDhcpHosts(deps: NetworkNicsDeps, facts: NetworkNicsFacts): Promise<void> {
  if (!deps.network) return;
  for (const [key, old] of Object.entries(facts.dhcpHosts ?? {})) await removeEntry(deps, key, old);
  delete facts.dhcpHosts;
}
