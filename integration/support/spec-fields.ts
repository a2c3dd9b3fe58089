/**
 * The spec's field tables (../shared/SPEC.md, "Resources and their fields"), transcribed: for each
 * object the API renders, every field the spec names and its JSON type. `checkSpecFields` lists what
 * an object lacks or has with the wrong type; extra fields (LXD's, which clients read) are allowed.
 */

/** A JSON type as the spec states it. */
export type FieldType =
  | 'string'
  | 'integer'
  | 'boolean'
  /** A string in RFC 3339 form (`…T…Z` or with an offset, optional fractional seconds). */
  | 'timestamp'
  /** A JSON object (any values). */
  | 'map'
  /** A map of string keys to string values (`config`, `properties`). */
  | 'string-map'
  /** Device name → map of strings containing at least `type`. */
  | 'devices'
  | 'list'
  | 'string-list'
  /** A list of resource URL strings (`used_by`). */
  | 'url-list'
  | { enum: readonly string[] }
  | { object: Fields }
  | { listOf: Fields }
  | { mapOf: Fields }
  /** The field may be null (the spec's type otherwise). */
  | { nullable: FieldType };

export type Fields = Readonly<Record<string, FieldType>>;

const address: Fields = {
  family: { enum: ['inet', 'inet6'] },
  address: 'string',
  netmask: 'string',
  scope: { enum: ['global', 'link', 'local'] },
};
const counters: Fields = {
  bytes_received: 'integer',
  bytes_sent: 'integer',
  packets_received: 'integer',
  packets_sent: 'integer',
};

const serverGuest: Fields = {
  api_extensions: 'string-list',
  api_status: { enum: ['development', 'stable', 'deprecated'] },
  api_version: 'string',
  auth: { enum: ['guest', 'untrusted', 'trusted'] },
  public: 'boolean',
};

const containerSnapshot: Fields = {
  architecture: 'string',
  config: 'string-map',
  created_at: 'timestamp',
  devices: 'devices',
  ephemeral: 'boolean',
  expanded_config: 'string-map',
  expanded_devices: 'devices',
  name: 'string',
  profiles: 'string-list',
  stateful: 'boolean',
  // entity_description
  description: 'string',
};

const containerState: Fields = {
  status: 'string',
  status_code: 'integer',
  cpu: { object: { usage: 'integer' } },
  disk: { mapOf: { usage: 'integer' } },
  memory: { object: { usage: 'integer', usage_peak: 'integer', swap_usage: 'integer', swap_usage_peak: 'integer' } },
  network: {
    mapOf: {
      addresses: { listOf: address },
      counters: { object: counters },
      hwaddr: 'string',
      host_name: 'string',
      mtu: 'integer',
      state: 'string',
      type: 'string',
    },
  },
  pid: 'integer',
  processes: 'integer',
};

const backup: Fields = {
  name: 'string',
  creation_date: 'timestamp',
  expiry_date: 'timestamp',
  container_only: 'boolean',
  optimized_storage: 'boolean',
};

const container: Fields = {
  name: 'string',
  architecture: 'string',
  profiles: 'string-list',
  ephemeral: 'boolean',
  config: 'string-map',
  devices: 'devices',
  expanded_config: 'string-map',
  expanded_devices: 'devices',
  created_at: 'timestamp',
  last_used_at: 'timestamp',
  stateful: 'boolean',
  status: 'string',
  status_code: 'integer',
  // entity_description
  description: 'string',
};

export const SPEC_FIELDS = {
  operation: {
    id: 'string',
    class: { enum: ['task', 'websocket', 'token'] },
    description: 'string',
    created_at: 'timestamp',
    updated_at: 'timestamp',
    status: 'string',
    status_code: 'integer',
    resources: 'map',
    metadata: 'map',
    may_cancel: 'boolean',
    err: 'string',
  },
  serverGuest,
  serverTrusted: {
    ...serverGuest,
    config: 'map',
    environment: {
      object: {
        addresses: 'string-list',
        architectures: 'string-list',
        certificate: 'string',
        driver: 'string',
        driver_version: 'string',
        kernel: 'string',
        kernel_architecture: 'string',
        kernel_version: 'string',
        server: 'string',
        server_pid: 'integer',
        server_version: 'string',
        storage: 'string',
        storage_version: 'string',
      },
    },
  },
  certificate: { type: { enum: ['client'] }, certificate: 'string', name: 'string', fingerprint: 'string' },
  container,
  /** recursion=2 (container_full): the container plus its state, snapshots and backups. */
  containerFull: {
    ...container,
    state: { object: containerState },
    snapshots: { listOf: containerSnapshot },
    backups: { listOf: backup },
  },
  containerSnapshot,
  containerState,
  containerMetadata: {
    architecture: 'string',
    creation_date: 'integer',
    expiry_date: 'integer',
    properties: 'string-map',
    templates: { mapOf: { when: 'string-list', create_only: 'boolean', template: 'string', properties: 'string-map' } },
  },
  backup,
  image: {
    fingerprint: 'string',
    filename: 'string',
    architecture: 'string',
    aliases: { listOf: { name: 'string', description: 'string' } },
    auto_update: 'boolean',
    cached: 'boolean',
    properties: 'string-map',
    // An object when the image came from another server; svcd holds none such (no remote pulls), and
    // renders null like LXD's absent pointer: an empty object would make `lxc image info` print an empty source.
    update_source: {
      nullable: { object: { server: 'string', protocol: 'string', certificate: 'string', alias: 'string' } },
    },
    public: 'boolean',
    size: 'integer',
    created_at: 'timestamp',
    expires_at: 'timestamp',
    last_used_at: 'timestamp',
    uploaded_at: 'timestamp',
  },
  imageAlias: { name: 'string', description: 'string', target: 'string' },
  profile: { name: 'string', description: 'string', config: 'string-map', devices: 'devices', used_by: 'url-list' },
  network: {
    name: 'string',
    description: 'string',
    config: 'string-map',
    managed: 'boolean',
    type: 'string',
    used_by: 'url-list',
  },
  networkState: {
    addresses: { listOf: address },
    counters: { object: counters },
    hwaddr: 'string',
    mtu: 'integer',
    state: 'string',
    type: 'string',
  },
  project: { name: 'string', description: 'string', config: 'string-map', used_by: 'url-list' },
  storagePool: { name: 'string', driver: 'string', config: 'string-map', used_by: 'url-list', description: 'string' },
  storagePoolResources: {
    space: { object: { used: 'integer', total: 'integer' } },
    inodes: { object: { used: 'integer', total: 'integer' } },
  },
  storageVolume: {
    name: 'string',
    type: { enum: ['custom', 'container', 'image'] },
    config: 'string-map',
    used_by: 'url-list',
    description: 'string',
  },
  volumeSnapshot: { name: 'string', description: 'string', config: 'string-map' },
  resources: {
    cpu: {
      object: {
        sockets: {
          listOf: {
            cores: 'integer',
            frequency: 'integer',
            frequency_turbo: 'integer',
            name: 'string',
            vendor: 'string',
            threads: 'integer',
          },
        },
        total: 'integer',
      },
    },
    memory: { object: { used: 'integer', total: 'integer' } },
  },
  cluster: {
    server_name: 'string',
    enabled: 'boolean',
    member_config: {
      listOf: { entity: { enum: ['storage-pool', 'network'] }, name: 'string', key: 'string', description: 'string' },
    },
  },
} as const satisfies Record<string, Fields>;

export type SpecObject = keyof typeof SPEC_FIELDS;

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function describe(v: unknown): string {
  return v === null
    ? 'null'
    : Array.isArray(v)
      ? 'a list'
      : typeof v === 'string'
        ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)
        : typeof v === 'object'
          ? 'an object'
          : `${typeof v} ${String(v)}`;
}

function checkValue(where: string, type: FieldType, v: unknown, out: string[]): void {
  const bad = (want: string): void => void out.push(`${where}: expected ${want}, got ${describe(v)}`);
  if (typeof type === 'object') {
    if ('nullable' in type) {
      if (v !== null) checkValue(where, type.nullable, v, out);
      return;
    }
    if ('enum' in type) {
      if (typeof v !== 'string' || !type.enum.includes(v)) bad(`one of ${type.enum.join(', ')}`);
      return;
    }
    if ('object' in type) {
      if (!isObject(v)) return bad('an object');
      checkFields(where, type.object, v, out);
      return;
    }
    if ('listOf' in type) {
      if (!Array.isArray(v)) return bad('a list');
      v.forEach((item, i) => {
        if (isObject(item)) checkFields(`${where}[${i}]`, type.listOf, item, out);
        else out.push(`${where}[${i}]: expected an object, got ${describe(item)}`);
      });
      return;
    }
    if (!isObject(v)) return bad('a map');
    for (const [k, item] of Object.entries(v)) {
      if (isObject(item)) checkFields(`${where}.${k}`, type.mapOf, item, out);
      else out.push(`${where}.${k}: expected an object, got ${describe(item)}`);
    }
    return;
  }
  switch (type) {
    case 'string':
      if (typeof v !== 'string') bad('a string');
      return;
    case 'integer':
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) bad('an integer');
      return;
    case 'boolean':
      if (typeof v !== 'boolean') bad('a boolean');
      return;
    case 'timestamp':
      if (typeof v !== 'string' || !RFC3339.test(v) || Number.isNaN(Date.parse(v))) bad('an RFC 3339 timestamp');
      return;
    case 'map':
      if (!isObject(v)) bad('a map');
      return;
    case 'string-map':
      if (!isObject(v)) return bad('a map of strings');
      for (const [k, s] of Object.entries(v))
        if (typeof s !== 'string') out.push(`${where}.${k}: expected a string, got ${describe(s)}`);
      return;
    case 'devices':
      if (!isObject(v)) return bad('a map of devices');
      for (const [k, d] of Object.entries(v)) {
        if (!isObject(d)) {
          out.push(`${where}.${k}: expected a device (map of strings), got ${describe(d)}`);
          continue;
        }
        if (typeof d.type !== 'string') out.push(`${where}.${k}.type: expected a string, got ${describe(d.type)}`);
        for (const [p, s] of Object.entries(d))
          if (typeof s !== 'string') out.push(`${where}.${k}.${p}: expected a string, got ${describe(s)}`);
      }
      return;
    case 'list':
      if (!Array.isArray(v)) bad('a list');
      return;
    case 'string-list':
    case 'url-list':
      if (!Array.isArray(v)) return bad('a list');
      v.forEach((s, i) => {
        if (typeof s !== 'string') out.push(`${where}[${i}]: expected a string, got ${describe(s)}`);
        else if (type === 'url-list' && !s.startsWith('/1.0/'))
          out.push(`${where}[${i}]: expected a resource URL, got ${describe(s)}`);
      });
      return;
  }
}

function checkFields(where: string, fields: Fields, obj: Record<string, unknown>, out: string[]): void {
  for (const [name, type] of Object.entries(fields)) {
    if (!(name in obj)) out.push(`${where}.${name}: missing`);
    else checkValue(`${where}.${name}`, type, obj[name], out);
  }
}

/** Every spec field of `kind` missing from `value` or of the wrong JSON type, as readable lines (empty when it conforms). */
export function checkSpecFields(kind: SpecObject, value: unknown): string[] {
  const out: string[] = [];
  if (!isObject(value)) return [`${kind}: expected an object, got ${describe(value)}`];
  checkFields(kind, SPEC_FIELDS[kind], value, out);
  return out;
}
