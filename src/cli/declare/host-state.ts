import type { ContainerDoc, NetworkDoc, PoolDoc, ProfileDoc, ProjectDoc, VolumeDoc } from './document.ts';

/** What the server holds, read in a few recursive GETs: the same shapes as the document. */
export interface HostState {
  /** `svcd` or `lxd` (GET /1.0 environment.server): svcd's own validators pre-check only svcd. */
  server: string;
  /** GET /1.0 config; hidden secrets arrive as `true`. */
  config: Record<string, unknown>;
  projects: ProjectDoc[];
  storage_pools: PoolDoc[];
  /** Every network the server lists; only managed ones are the document's to change. */
  networks: (NetworkDoc & { managed: boolean })[];
  /** Custom volumes only. */
  storage_volumes: VolumeDoc[];
  profiles: ProfileDoc[];
  containers: (ContainerDoc & { status: string; architecture?: string })[];
  images: { fingerprints: string[]; aliases: string[] };
}
