import { parse, stringify } from 'yaml';
import { InvalidBackupError } from './errors.ts';

/**
 * LXD 5.0's backup description (lxd/backup/config: `backup.yaml`, also embedded in `index.yaml` as
 * `config`): the instance, its snapshots (instance snapshot objects), its pool and its root volume.
 */
export interface BackupConfig {
  container: BackupInstance;
  snapshots: BackupSnapshot[];
  pool?: Record<string, unknown>;
  volume?: Record<string, unknown>;
}

type Devices = Record<string, Record<string, string>>;

export interface BackupInstance {
  name: string;
  description: string;
  architecture: string;
  ephemeral: boolean;
  profiles: string[];
  config: Record<string, string>;
  devices: Devices;
  [key: string]: unknown;
}

export interface BackupSnapshot {
  name: string;
  architecture: string;
  ephemeral: boolean;
  stateful: boolean;
  profiles: string[];
  config: Record<string, string>;
  devices: Devices;
  /** RFC 3339. */
  created_at: string;
  /** RFC 3339; LXD's zero time (`0001-01-01T00:00:00Z`) or svcd's `1970-01-01T00:00:00Z` when none. */
  expires_at: string;
  [key: string]: unknown;
}

/** What `backup/index.yaml` records (LXD 5.0's backup.Info). */
export interface BackupIndex {
  name: string;
  backend: string;
  pool: string;
  /** The snapshots packed under `backup/snapshots/<name>/`, oldest first (none for container_only). */
  snapshots: string[];
  optimized: boolean;
  optimized_header: boolean;
  type: string;
  config?: BackupConfig;
}

/** At most this much YAML is read from a backup (index.yaml, backup.yaml). */
export const MAX_BACKUP_YAML_BYTES = 4 * 1024 * 1024;

/** `backup/index.yaml` text (LXD's key order). */
export function renderBackupIndex(index: BackupIndex): string {
  const { name, backend, pool, snapshots, optimized, optimized_header, type, config } = index;
  return stringify({
    name,
    backend,
    pool,
    ...(snapshots.length ? { snapshots } : {}),
    optimized,
    optimized_header,
    type,
    ...(config ? { config } : {}),
  });
}

/** `backup.yaml` text. */
export function renderBackupConfig(config: BackupConfig): string {
  return stringify(config);
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function parseYaml(text: string, what: string): unknown {
  try {
    return parse(text, { maxAliasCount: 100 });
  } catch (e) {
    throw new InvalidBackupError(`Invalid backup: ${what} is not valid YAML (${(e as Error).message})`);
  }
}

function stringMap(x: unknown, what: string): Record<string, string> {
  if (x === undefined || x === null) return {};
  if (!isObject(x)) throw new InvalidBackupError(`Invalid backup: ${what} must be a map`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(x)) {
    if (v === null || v === undefined) continue;
    if (typeof v === 'object') throw new InvalidBackupError(`Invalid backup: ${what}.${k} must be a string`);
    out[k] = String(v);
  }
  return out;
}

function deviceMap(x: unknown, what: string): Devices {
  if (x === undefined || x === null) return {};
  if (!isObject(x)) throw new InvalidBackupError(`Invalid backup: ${what} must be a map of devices`);
  return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, stringMap(v, `${what}.${k}`)]));
}

function stringList(x: unknown, what: string, fallback: string[]): string[] {
  if (x === undefined || x === null) return fallback;
  if (!Array.isArray(x) || !x.every((s) => typeof s === 'string'))
    throw new InvalidBackupError(`Invalid backup: ${what} must be a list of names`);
  return x as string[];
}

/** A timestamp as RFC 3339 (YAML may give a Date or a string); undefined when absent or unreadable. */
function timestamp(x: unknown): string | undefined {
  const d = x instanceof Date ? x : typeof x === 'string' && x ? new Date(x) : undefined;
  return d && !Number.isNaN(d.getTime()) ? d.toISOString() : undefined;
}

const ZERO = '0001-01-01T00:00:00.000Z';

function parseInstance(x: unknown, what: string): BackupInstance {
  if (!isObject(x)) throw new InvalidBackupError(`Invalid backup: ${what} has no container`);
  return {
    ...x,
    name: typeof x.name === 'string' ? x.name : '',
    description: typeof x.description === 'string' ? x.description : '',
    architecture: typeof x.architecture === 'string' ? x.architecture : '',
    ephemeral: x.ephemeral === true,
    profiles: stringList(x.profiles, `${what}: container.profiles`, ['default']),
    config: stringMap(x.config, `${what}: container.config`),
    devices: deviceMap(x.devices, `${what}: container.devices`),
  };
}

function parseSnapshot(x: unknown, what: string, container: BackupInstance): BackupSnapshot {
  if (!isObject(x) || typeof x.name !== 'string' || !x.name)
    throw new InvalidBackupError(`Invalid backup: ${what}: every snapshot needs a name`);
  // LXD 5.0 writes the bare snapshot name; older writers "<container>/<snapshot>".
  const name = x.name.includes('/') ? x.name.slice(x.name.lastIndexOf('/') + 1) : x.name;
  const w = `${what}: snapshot "${name}"`;
  return {
    ...x,
    name,
    architecture: typeof x.architecture === 'string' && x.architecture ? x.architecture : container.architecture,
    ephemeral: x.ephemeral === true,
    stateful: x.stateful === true,
    profiles: stringList(x.profiles, `${w} profiles`, container.profiles),
    config: stringMap(x.config, `${w} config`),
    devices: deviceMap(x.devices, `${w} devices`),
    created_at: timestamp(x.created_at) ?? ZERO,
    expires_at: timestamp(x.expires_at) ?? ZERO,
  };
}

/** A backup config (backup.yaml, or index.yaml's `config`) already parsed from YAML. */
export function backupConfigOf(x: unknown, what: string): BackupConfig {
  if (!isObject(x)) throw new InvalidBackupError(`Invalid backup: ${what} is not a map`);
  const container = parseInstance(x.container, what);
  if (x.snapshots !== undefined && x.snapshots !== null && !Array.isArray(x.snapshots))
    throw new InvalidBackupError(`Invalid backup: ${what}: snapshots must be a list`);
  const snapshots = ((x.snapshots as unknown[] | null | undefined) ?? []).map((s) => parseSnapshot(s, what, container));
  return {
    container,
    snapshots,
    ...(isObject(x.pool) ? { pool: x.pool } : {}),
    ...(isObject(x.volume) ? { volume: x.volume } : {}),
  };
}

/** Parse `backup.yaml`. */
export function parseBackupConfig(text: string, what = 'backup/container/backup.yaml'): BackupConfig {
  return backupConfigOf(parseYaml(text, what), what);
}

/** Parse `backup/index.yaml` (LXD 5.0's or svcd's; `config` only when it has a container). */
export function parseBackupIndex(text: string): BackupIndex {
  const what = 'backup/index.yaml';
  const x = parseYaml(text, what);
  if (!isObject(x) || typeof x.name !== 'string' || !x.name)
    throw new InvalidBackupError(`Invalid backup: ${what} has no name`);
  const snapshots = stringList(x.snapshots, `${what}: snapshots`, []);
  if (new Set(snapshots).size !== snapshots.length)
    throw new InvalidBackupError(`Invalid backup: ${what} lists a snapshot twice`);
  return {
    name: x.name,
    backend: typeof x.backend === 'string' ? x.backend : '',
    pool: typeof x.pool === 'string' ? x.pool : '',
    snapshots,
    optimized: x.optimized === true,
    optimized_header: x.optimized_header === true,
    type: typeof x.type === 'string' && x.type ? x.type : 'container',
    ...(isObject(x.config) && x.config.container !== undefined && x.config.container !== null
      ? { config: backupConfigOf(x.config, what) }
      : {}),
  };
}

/** svcd's "no expiry" timestamp (the API's). */
const UNSET = '1970-01-01T00:00:00Z';

interface InstanceFacts {
  name: string;
  description?: string;
  architecture: string;
  ephemeral: boolean;
  profiles: string[];
  config: Record<string, string>;
  devices: Devices;
  createdAt: Date;
  expanded: { config: Record<string, string>; devices: Devices };
}

/**
 * The backup description of a container and the snapshots packed with it (pure): LXD's instance and
 * instance-snapshot objects, its pool and its root volume.
 */
export function describeBackup(opts: {
  project: string;
  container: InstanceFacts & { lastUsedAt: Date | null };
  snapshots: InstanceFacts[];
  pool: { name: string; driver: string; description: string; config: Record<string, string> };
}): BackupConfig {
  const c = opts.container;
  return {
    container: {
      name: c.name,
      description: c.description ?? '',
      architecture: c.architecture,
      ephemeral: c.ephemeral,
      profiles: c.profiles,
      config: c.config,
      devices: c.devices,
      expanded_config: c.expanded.config,
      expanded_devices: c.expanded.devices,
      stateful: false,
      created_at: c.createdAt.toISOString(),
      last_used_at: c.lastUsedAt?.toISOString() ?? UNSET,
      type: 'container',
      project: opts.project,
    },
    snapshots: opts.snapshots.map((s) => ({
      name: s.name,
      architecture: s.architecture,
      ephemeral: s.ephemeral,
      stateful: false,
      profiles: s.profiles,
      config: s.config,
      devices: s.devices,
      expanded_config: s.expanded.config,
      expanded_devices: s.expanded.devices,
      created_at: s.createdAt.toISOString(),
      last_used_at: UNSET,
      // svcd keeps no snapshot expiry (the API shows none either).
      expires_at: UNSET,
    })),
    pool: {
      name: opts.pool.name,
      driver: opts.pool.driver,
      description: opts.pool.description,
      config: opts.pool.config,
      status: 'Created',
      locations: ['none'],
    },
    volume: {
      name: c.name,
      type: 'container',
      content_type: 'filesystem',
      description: '',
      config: {},
      project: opts.project,
      location: 'none',
    },
  };
}
