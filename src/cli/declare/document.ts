/**
 * The declarative document: LXD's preseed (`config`, `networks`, `storage_pools`, `profiles`, `projects`)
 * plus `storage_volumes` and `containers` for `svcd apply`. Everything lives in the default project;
 * `projects` makes the projects themselves exist.
 */
export type StringMap = Record<string, string>;
export type DeviceMap = Record<string, StringMap>;

export interface ProjectDoc {
  name: string;
  description?: string;
  config?: StringMap;
}

export interface PoolDoc {
  name: string;
  driver: string;
  description?: string;
  config?: StringMap;
}

export interface NetworkDoc {
  name: string;
  type?: string;
  description?: string;
  config?: StringMap;
}

export interface VolumeDoc {
  pool: string;
  name: string;
  description?: string;
  config?: StringMap;
}

export interface ProfileDoc {
  name: string;
  description?: string;
  config?: StringMap;
  devices?: DeviceMap;
}

/** As on `POST /1.0/containers` for images (`type: image` with an alias or fingerprint), or `type: none`. */
export type ContainerSource = StringMap;

export interface ContainerDoc {
  name: string;
  source?: ContainerSource;
  /** Absent: `[default]`, as on create. */
  profiles?: string[];
  config?: StringMap;
  devices?: DeviceMap;
  ephemeral?: boolean;
  description?: string;
  /** Default running. */
  state?: 'running' | 'stopped';
}

export interface HostDoc {
  config?: StringMap;
  projects?: ProjectDoc[];
  storage_pools?: PoolDoc[];
  networks?: NetworkDoc[];
  storage_volumes?: VolumeDoc[];
  profiles?: ProfileDoc[];
  containers?: ContainerDoc[];
}

/** The kinds, in the order they are created; deletions go the other way. */
export const KINDS = ['project', 'storage_pool', 'network', 'storage_volume', 'profile', 'container'] as const;
export type Kind = (typeof KINDS)[number];

/** How a kind is named in messages and plan lines. */
export const KIND_LABEL: Record<Kind, string> = {
  project: 'project',
  storage_pool: 'storage pool',
  network: 'network',
  storage_volume: 'storage volume',
  profile: 'profile',
  container: 'container',
};

/** A volume's key in plans and messages: `pool/name`. */
export const volumeKey = (v: { pool: string; name: string }) => `${v.pool}/${v.name}`;

/** An invalid document (or a document that cannot be applied): the message names the object and the key. */
export class DocumentError extends Error {}
