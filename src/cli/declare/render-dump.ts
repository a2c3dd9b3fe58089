import { stringify } from 'yaml';
import type { HostState } from './host-state.ts';

/**
 * `svcd init --dump`: the server's configuration as LXD's preseed (`config`, managed `networks`,
 * `storage_pools`, `profiles`, `projects`). Secrets the server hides (`core.trust_password: true`)
 * are left out, so feeding the dump back changes nothing. Pure.
 */
export function renderDump(host: HostState): string {
  const config = Object.fromEntries(
    Object.entries(host.config)
      .filter(([, v]) => typeof v === 'string' || typeof v === 'number')
      .map(([k, v]) => [k, String(v)]),
  );
  const doc = {
    config,
    networks: host.networks
      .filter((n) => n.managed)
      .map((n) => ({
        config: n.config,
        description: n.description ?? '',
        name: n.name,
        type: n.type ?? '',
        project: 'default',
      })),
    storage_pools: host.storage_pools.map((p) => ({
      config: p.config,
      description: p.description ?? '',
      name: p.name,
      driver: p.driver,
    })),
    profiles: host.profiles.map((p) => ({
      config: p.config,
      description: p.description ?? '',
      devices: p.devices,
      name: p.name,
    })),
    projects: host.projects.map((p) => ({ config: p.config, description: p.description ?? '', name: p.name })),
  };
  return stringify(doc, { lineWidth: 0 });
}
