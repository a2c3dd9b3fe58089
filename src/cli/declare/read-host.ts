import type { ApiClient } from './api-client.ts';
import type { HostState } from './host-state.ts';

/** An object as the server sent it. */
type Raw = Record<string, unknown> & { name: string; type?: string; config?: unknown; description?: string };
const list = (v: unknown): Raw[] => (Array.isArray(v) ? (v as Raw[]) : []);
const strings = (v: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries((v ?? {}) as Record<string, unknown>).map(([k, x]) => [k, String(x)]));
const devices = (v: unknown): Record<string, Record<string, string>> =>
  Object.fromEntries(Object.entries((v ?? {}) as Record<string, unknown>).map(([k, d]) => [k, strings(d)]));

/**
 * The server's state in one request per collection (recursion=1), plus one per pool for its volumes:
 * never one per object. `images`: whether the image lists are needed (a document that creates containers).
 */
export async function readHost(api: ApiClient, opts: { images: boolean }): Promise<HostState> {
  const [rootRaw, projects, pools, networks, profiles, containers, images, aliases] = await Promise.all([
    api.get('/1.0'),
    api.get('/1.0/projects?recursion=1'),
    api.get('/1.0/storage-pools?recursion=1'),
    api.get('/1.0/networks?recursion=1'),
    api.get('/1.0/profiles?recursion=1'),
    api.get('/1.0/containers?recursion=1'),
    opts.images ? api.get('/1.0/images?recursion=1') : [],
    opts.images ? api.get('/1.0/images/aliases?recursion=1') : [],
  ]);
  const root = rootRaw as { environment?: { server?: unknown }; config?: Record<string, unknown> } | undefined;
  const volumes = await Promise.all(
    list(pools).map(async (p) =>
      list(await api.get(`/1.0/storage-pools/${encodeURIComponent(String(p.name))}/volumes?recursion=1`))
        .filter((v) => v.type === 'custom')
        .map((v) => ({
          pool: String(p.name),
          name: String(v.name),
          description: v.description ?? '',
          config: strings(v.config),
        })),
    ),
  );
  return {
    server: String(root?.environment?.server ?? ''),
    config: (root?.config ?? {}) as Record<string, unknown>,
    projects: list(projects).map((p) => ({
      name: p.name,
      description: p.description ?? '',
      config: strings(p.config),
    })),
    storage_pools: list(pools).map((p) => ({
      name: p.name,
      driver: String(p.driver),
      description: p.description ?? '',
      config: strings(p.config),
    })),
    networks: list(networks).map((n) => ({
      name: n.name,
      type: n.type,
      managed: n.managed === true,
      description: n.description ?? '',
      config: strings(n.config),
    })),
    storage_volumes: volumes.flat(),
    profiles: list(profiles).map((p) => ({
      name: p.name,
      description: p.description ?? '',
      config: strings(p.config),
      devices: devices(p.devices),
    })),
    containers: list(containers).map((c) => ({
      name: c.name,
      status: String(c.status ?? ''),
      architecture: String(c.architecture ?? ''),
      description: c.description ?? '',
      profiles: list(c.profiles).map(String),
      config: strings(c.config),
      devices: devices(c.devices),
      ephemeral: c.ephemeral === true,
    })),
    images: {
      fingerprints: list(images).map((i) => String(i.fingerprint)),
      aliases: list(aliases).map((a) => String(a.name)),
    },
  };
}
