/** A container's nics at a desired write: the host features their keys need, the cross-object checks, their MACs. */
import { randomBytes } from 'node:crypto';
import type { DbOrTx } from '../db/types.ts';
import { type ContainerInput, expandStoredContainer, expandWith } from './container-expand.ts';
import { nicTypeOf } from './devices-nic.ts';
import { ValidationError } from './errors.ts';
import { checkContainerNics, volatileHwaddrKey } from './network-nics.ts';
import type { ProfileRow } from './schema/index.ts';

/** Whether this host can do what a nic key needs (`vlan`: 802.1Q); `missing` names what it lacks. */
export type NicFeatureProbe = (feature: 'vlan') => Promise<{ ok: boolean; missing?: string }>;

/**
 * Refuse nic keys svcd cannot carry out here (the probe is the host's, passed in by the API): `vlan`
 * names what the host lacks, and where the host has 802.1Q it is still refused, since svcd does not
 * build VLANs on bridged nics (bridge vlan_filtering) yet.
 */
export async function checkNicFeatures(
  devices: Record<string, Record<string, string>>,
  probe: NicFeatureProbe,
): Promise<void> {
  for (const [name, d] of Object.entries(devices)) {
    if (d.type !== 'nic' || d.vlan === undefined) continue;
    const r = await probe('vlan');
    if (!r.ok)
      throw new ValidationError(
        `Device "${name}" (nic): "vlan" is not available on this host: ${r.missing ?? 'no VLAN support'}`,
      );
    throw new ValidationError(
      `Device "${name}" (nic): "vlan" is not supported by svcd yet (VLANs on bridged nics need bridge vlan_filtering, not built)`,
    );
  }
}

/** A random MAC with LXD's 00:16:3e prefix. */
const randomHwaddr = () =>
  ['00', '16', '3e', ...[...randomBytes(3)].map((b) => b.toString(16).padStart(2, '0'))].join(':');

/**
 * The config with `volatile.<nic>.hwaddr` for each expanded nic without `hwaddr` (generated once, kept
 * after), and without those of nics that went.
 */
export function withNicHwaddrs(
  config: Record<string, string>,
  devices: Record<string, Record<string, string>>,
): Record<string, string> {
  const out = { ...config };
  for (const k of Object.keys(out)) {
    const m = /^volatile\.(.+)\.hwaddr$/.exec(k);
    if (m && devices[m[1]!]?.type !== 'nic') delete out[k];
  }
  for (const [name, d] of Object.entries(devices))
    if (d.type === 'nic' && !d.hwaddr && nicTypeOf(d) !== 'physical' && !out[volatileHwaddrKey(name)])
      out[volatileHwaddrKey(name)] = randomHwaddr();
  return out;
}

/**
 * At a desired write of a container (id undefined when new): the cross-object nic checks (network-nics.ts)
 * on its expanded devices, and its config with the nics' volatile hwaddrs.
 */
export async function prepareNics(
  tx: DbOrTx,
  id: string | undefined,
  project: string,
  c: Pick<ContainerInput, 'profiles' | 'config' | 'devices'>,
  locked?: ProfileRow[],
): Promise<Record<string, string>> {
  const { devices } = locked ? expandWith(locked, c) : await expandStoredContainer(tx, { project, ...c });
  await checkContainerNics(tx, id, devices);
  return withNicHwaddrs(c.config, devices);
}
