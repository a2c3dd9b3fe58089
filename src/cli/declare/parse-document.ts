import { parse, YAMLParseError } from 'yaml';
import { BOOL_VALUE, parseBool } from '../../util/parse-bool.ts';
import { DocumentError, type DeviceMap, type HostDoc, type StringMap } from './document.ts';

/** `preseed`: what `lxd init --preseed` reads; `apply`: that plus `storage_volumes` and `containers`. */
export type DocumentMode = 'preseed' | 'apply';

const PRESEED_KEYS = ['config', 'networks', 'storage_pools', 'profiles', 'projects', 'cluster'];
const APPLY_KEYS = [...PRESEED_KEYS, 'storage_volumes', 'containers'];

const OBJECT_KEYS: Record<string, string[]> = {
  projects: ['name', 'description', 'config'],
  storage_pools: ['name', 'driver', 'description', 'config'],
  // `project` and `type` as `lxd init --dump` writes them.
  networks: ['name', 'type', 'description', 'config', 'project'],
  storage_volumes: ['pool', 'name', 'description', 'config', 'type'],
  profiles: ['name', 'description', 'config', 'devices'],
  containers: ['name', 'source', 'profiles', 'config', 'devices', 'ephemeral', 'description', 'state'],
};
const SOURCE_KEYS = [
  'type',
  'alias',
  'fingerprint',
  'properties',
  'server',
  'protocol',
  'certificate',
  'secret',
  'mode',
];
const LABEL: Record<string, string> = {
  projects: 'project',
  storage_pools: 'storage pool',
  networks: 'network',
  storage_volumes: 'storage volume',
  profiles: 'profile',
  containers: 'container',
};
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** The failsafe schema keeps every scalar as written: `limits.cpu: 2` is "2", `1.10` stays "1.10". */
const isNull = (v: unknown) => v === undefined || v === null || v === '' || v === 'null' || v === '~';
const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function stringMap(v: unknown, where: string): StringMap {
  if (isNull(v)) return {};
  if (!isMap(v)) throw new DocumentError(`${where} must be a map of strings`);
  const out: StringMap = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string') throw new DocumentError(`${where}: key "${k}" must be a string`);
    out[k] = x;
  }
  return out;
}

function deviceMap(v: unknown, where: string): DeviceMap {
  if (isNull(v)) return {};
  if (!isMap(v)) throw new DocumentError(`${where}: "devices" must be a map of devices`);
  const out: DeviceMap = {};
  for (const [name, dev] of Object.entries(v)) {
    if (!NAME.test(name)) throw new DocumentError(`${where}: invalid device name "${name}"`);
    const d = stringMap(dev, `${where}: device "${name}"`);
    if (!d.type) throw new DocumentError(`${where}: device "${name}": key "type" is required`);
    out[name] = d;
  }
  return out;
}

function checkKeys(obj: Record<string, unknown>, allowed: string[], where: string) {
  for (const k of Object.keys(obj))
    if (!allowed.includes(k)) throw new DocumentError(`${where}: unknown key "${k}" (allowed: ${allowed.join(', ')})`);
}

function parseObject(section: string, raw: unknown, index: number): Record<string, unknown> {
  const label = LABEL[section]!;
  if (!isMap(raw)) throw new DocumentError(`${section}[${index}]: each ${label} must be a map`);
  const name = raw.name;
  if (typeof name !== 'string' || !NAME.test(name))
    throw new DocumentError(
      `${section}[${index}]: key "name" ${typeof name === 'string' ? `"${name}" is not a valid name` : 'is required'}`,
    );
  const where = section === 'storage_volumes' ? `${label} "${String(raw.pool)}/${name}"` : `${label} "${name}"`;
  checkKeys(raw, OBJECT_KEYS[section]!, where);
  const out: Record<string, unknown> = { name };
  if (!isNull(raw.description)) {
    if (typeof raw.description !== 'string') throw new DocumentError(`${where}: key "description" must be a string`);
    out.description = raw.description;
  }
  out.config = stringMap(raw.config, `${where}: "config"`);
  switch (section) {
    case 'storage_pools':
      if (typeof raw.driver !== 'string' || !raw.driver) throw new DocumentError(`${where}: key "driver" is required`);
      out.driver = raw.driver;
      break;
    case 'networks':
      if (!isNull(raw.type)) out.type = String(raw.type);
      if (!isNull(raw.project) && raw.project !== 'default')
        throw new DocumentError(`${where}: key "project": only networks of the default project are managed`);
      break;
    case 'storage_volumes':
      if (typeof raw.pool !== 'string' || !NAME.test(raw.pool))
        throw new DocumentError(`${where}: key "pool" is required`);
      out.pool = raw.pool;
      if (!isNull(raw.type) && raw.type !== 'custom')
        throw new DocumentError(`${where}: key "type": only custom volumes are managed`);
      break;
    case 'profiles':
      out.devices = deviceMap(raw.devices, where);
      break;
    case 'containers':
      parseContainer(raw, out, where);
      break;
  }
  return out;
}

function parseContainer(raw: Record<string, unknown>, out: Record<string, unknown>, where: string) {
  out.devices = deviceMap(raw.devices, where);
  if (!isNull(raw.profiles)) {
    if (!Array.isArray(raw.profiles) || raw.profiles.some((p) => typeof p !== 'string' || !NAME.test(p)))
      throw new DocumentError(`${where}: key "profiles" must be a list of profile names`);
    out.profiles = raw.profiles;
  }
  if (!isNull(raw.ephemeral)) {
    if (typeof raw.ephemeral !== 'string' || !BOOL_VALUE.test(raw.ephemeral))
      throw new DocumentError(`${where}: key "ephemeral" must be true or false`);
    out.ephemeral = parseBool(raw.ephemeral);
  }
  if (!isNull(raw.state)) {
    if (raw.state !== 'running' && raw.state !== 'stopped')
      throw new DocumentError(`${where}: key "state" must be running or stopped, got ${JSON.stringify(raw.state)}`);
    out.state = raw.state;
  }
  // The server deletes an ephemeral container when it stops: it could never stay stopped.
  if (out.ephemeral === true && out.state === 'stopped')
    throw new DocumentError(`${where}: key "state": an ephemeral container cannot be kept stopped`);
  if (!isNull(raw.source)) {
    const source = stringMap(raw.source, `${where}: "source"`);
    checkKeys(source, SOURCE_KEYS, `${where}: "source"`);
    if (source.type !== 'image' && source.type !== 'none')
      throw new DocumentError(`${where}: key "source.type" must be image or none`);
    if (source.type === 'image' && !source.alias && !source.fingerprint)
      throw new DocumentError(`${where}: key "source" needs an alias or a fingerprint`);
    out.source = source;
  }
}

/**
 * Parse and check the shape of a document (YAML or JSON). Unknown keys, at the top level or in an
 * object, and names given twice are errors naming the object and the key. References between
 * objects and to the server's images are checked later, against the server.
 */
export function parseDocument(text: string, mode: DocumentMode): HostDoc {
  let raw: unknown;
  try {
    raw = parse(text, { schema: 'failsafe', uniqueKeys: true });
  } catch (e) {
    if (e instanceof YAMLParseError) throw new DocumentError(`document: not valid YAML: ${e.message.split('\n')[0]}`);
    throw e;
  }
  if (isNull(raw)) return {};
  if (!isMap(raw)) throw new DocumentError('document: must be a map of sections');
  checkKeys(raw, mode === 'apply' ? APPLY_KEYS : PRESEED_KEYS, 'document');
  if (!isNull(raw.cluster)) throw new DocumentError('document: key "cluster": clustering is not supported');
  const doc: HostDoc = {};
  if (!isNull(raw.config)) doc.config = stringMap(raw.config, 'server: "config"');
  for (const section of Object.keys(OBJECT_KEYS)) {
    const list = raw[section];
    if (isNull(list)) continue;
    if (!Array.isArray(list)) throw new DocumentError(`document: key "${section}" must be a list`);
    const objects = list.map((o, i) => parseObject(section, o, i));
    const seen = new Set<string>();
    for (const o of objects) {
      const key = section === 'storage_volumes' ? `${o.pool}/${o.name}` : String(o.name);
      if (seen.has(key)) throw new DocumentError(`${LABEL[section]} "${key}": given twice`);
      seen.add(key);
    }
    (doc as Record<string, unknown>)[section] = objects;
  }
  return doc;
}
