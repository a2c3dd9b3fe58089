/**
 * What this host can do for container nic keys, read from /proc and /lib/modules without spawning:
 * `vlan` needs 802.1q (`/proc/net/vlan` exists once the 8021q code is in the kernel, or a loadable
 * 8021q module is listed for the running kernel).
 */
import { access, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface NicFeatureProbeInput {
  procRoot?: string;
  modulesRoot?: string;
  release?: string;
}

const exists = (p: string) => access(p).then(() => true, () => false);

export async function probeNicFeature(feature: 'vlan', { procRoot = '/proc', modulesRoot = '/lib/modules', release = os.release() }: NicFeatureProbeInput = {}): Promise<{ ok: boolean; missing?: string }> {
  if (feature !== 'vlan') return { ok: false, missing: `unknown feature "${String(feature)}"` };
  if (await exists(path.join(procRoot, 'net/vlan'))) return { ok: true };
  const dep = await readFile(path.join(modulesRoot, release, 'modules.dep'), 'utf8').catch(() => '');
  if (/(^|\/)8021q\.ko/m.test(dep)) return { ok: true };
  return { ok: false, missing: 'the kernel has no 802.1q VLAN support (no 8021q module, no /proc/net/vlan) and svcd does not use bridge vlan_filtering' };
}
