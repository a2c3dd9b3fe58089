import { validateConfig } from '../../desired/config-keys.ts';
import { validateDevices, validateExpandedDevices } from '../../desired/devices.ts';
import { ValidationError } from '../../desired/errors.ts';
import { instanceConfigKeys } from '../../desired/instance-config.ts';
import { DocumentError, volumeKey, type DeviceMap, type HostDoc, type StringMap } from './document.ts';
import type { HostState } from './host-state.ts';
import type { Plan } from './compute-plan.ts';

/** Run one of svcd's own validators; its refusal becomes a DocumentError naming the object. */
function svcdCheck(where: string, check: () => void) {
  try {
    check();
  } catch (e) {
    if (e instanceof ValidationError) throw new DocumentError(`${where}: ${e.message}`);
    throw e;
  }
}

/**
 * Everything that can be checked before the first write: each reference (pools, volumes, networks,
 * profiles, images) exists on the server or is made by the document, and is not deleted by the plan;
 * every container ends up with a root disk. Against svcd, its own validators of devices and of
 * container and profile config run too (the same code the server runs). Throws a DocumentError.
 */
export function checkReferences(doc: HostDoc, host: HostState, plan: Plan): void {
  const deleted = new Set(plan.steps.filter((s) => s.action === 'delete').map((s) => `${s.kind}:${s.name}`));
  const names = (kind: string, docNames: string[], hostNames: string[]) =>
    new Set([...docNames, ...hostNames.filter((n) => !deleted.has(`${kind}:${n}`))]);
  const pools = names(
    'storage_pool',
    (doc.storage_pools ?? []).map((p) => p.name),
    host.storage_pools.map((p) => p.name),
  );
  const volumes = names(
    'storage_volume',
    (doc.storage_volumes ?? []).map(volumeKey),
    host.storage_volumes.map(volumeKey),
  );
  const managed = names(
    'network',
    (doc.networks ?? []).map((n) => n.name),
    host.networks.filter((n) => n.managed).map((n) => n.name),
  );
  const anyNetwork = new Set([...managed, ...host.networks.map((n) => n.name)]);
  const svcd = host.server === 'svcd';
  const docProfiles = new Map((doc.profiles ?? []).map((p) => [p.name, p.devices ?? {}]));
  const hostProfiles = new Map(host.profiles.map((p) => [p.name, p.devices ?? {}]));
  const profileNames = names('profile', [...docProfiles.keys()], [...hostProfiles.keys()]);

  for (const v of doc.storage_volumes ?? [])
    if (!pools.has(v.pool))
      throw new DocumentError(`storage volume "${volumeKey(v)}": key "pool": no pool "${v.pool}"`);

  const checkDevices = (where: string, devices: DeviceMap, config: StringMap) => {
    if (svcd) {
      svcdCheck(where, () => validateDevices(devices));
      svcdCheck(where, () => validateConfig('instance', config, instanceConfigKeys));
    }
    for (const [name, d] of Object.entries(devices)) {
      const at = `${where}: device "${name}"`;
      if (d.type === 'disk' && d.pool !== undefined) {
        if (!pools.has(d.pool)) throw new DocumentError(`${at}: key "pool": no pool "${d.pool}"`);
        if (d.path !== '/' && d.source && !volumes.has(`${d.pool}/${d.source}`))
          throw new DocumentError(`${at}: key "source": no custom volume "${d.source}" in pool "${d.pool}"`);
      }
      if (d.type === 'nic' && d.network !== undefined && !managed.has(d.network))
        throw new DocumentError(`${at}: key "network": no managed network "${d.network}"`);
      if (d.type === 'nic' && d.network === undefined && d.parent !== undefined && !anyNetwork.has(d.parent))
        throw new DocumentError(`${at}: key "parent": no network or host interface "${d.parent}"`);
    }
  };
  for (const p of doc.profiles ?? []) checkDevices(`profile "${p.name}"`, p.devices ?? {}, p.config ?? {});

  const touched = new Set(plan.steps.filter((s) => s.kind === 'container' && s.action !== 'delete').map((s) => s.name));
  const created = new Set(plan.steps.filter((s) => s.kind === 'container' && s.action === 'create').map((s) => s.name));
  for (const c of doc.containers ?? []) {
    const where = `container "${c.name}"`;
    const profiles = c.profiles ?? ['default'];
    for (const p of profiles)
      if (!profileNames.has(p))
        throw new DocumentError(
          `${where}: key "profiles": no profile "${p}"${hostProfiles.has(p) ? ' (the plan deletes it)' : ''}`,
        );
    checkDevices(where, c.devices ?? {}, c.config ?? {});
    if (!touched.has(c.name)) continue;
    const expanded: DeviceMap = {};
    for (const p of profiles) Object.assign(expanded, docProfiles.get(p) ?? hostProfiles.get(p));
    Object.assign(expanded, c.devices);
    if (svcd) svcdCheck(where, () => validateExpandedDevices(expanded));
    if (!Object.values(expanded).some((d) => d.type === 'disk' && d.path === '/' && d.pool))
      throw new DocumentError(
        `${where}: key "devices": no root disk (a disk with path / and a pool), nor from its profiles`,
      );
    if (created.has(c.name)) checkImage(where, c.source, host);
  }
}

function checkImage(where: string, source: StringMap | undefined, host: HostState) {
  // Another server's image is looked up by the server at create: not pre-checked here.
  if (source?.type !== 'image' || source.server) return;
  if (source.alias !== undefined) {
    if (!host.images.aliases.includes(source.alias))
      throw new DocumentError(`${where}: key "source.alias": no image alias "${source.alias}" on the server`);
    return;
  }
  const fp = source.fingerprint ?? '';
  const matches = host.images.fingerprints.filter((f) => f.startsWith(fp));
  if (matches.length !== 1)
    throw new DocumentError(
      `${where}: key "source.fingerprint": ${matches.length ? 'more than one image matches' : 'no image matches'} "${fp}"`,
    );
}
