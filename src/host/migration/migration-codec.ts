import protobuf from 'protobufjs';
import { inPackage } from '../../util/package-root.ts';

/** Where our transcription of LXD's schema lives: next to this file in src/, found the same from dist/. */
const protoFile = inPackage('src/host/migration/migrate.proto');

const root = protobuf.loadSync(protoFile);
const headerType = root.lookupType('migration.MigrationHeader');
const controlType = root.lookupType('migration.MigrationControl');

export type MigrationFsType = 'RSYNC' | 'BTRFS' | 'ZFS' | 'RBD' | 'BLOCK_AND_RSYNC';
export type CriuType = 'CRIU_RSYNC' | 'PHAUL' | 'NONE';

export interface IdMapEntry {
  isuid: boolean;
  isgid: boolean;
  hostid: number;
  nsid: number;
  maprange: number;
}
export interface ConfigEntry {
  key: string;
  value: string;
}
export interface DeviceEntry {
  name: string;
  config?: ConfigEntry[];
}
export interface SnapshotEntry {
  name: string;
  localConfig?: ConfigEntry[];
  profiles?: string[];
  ephemeral: boolean;
  localDevices?: DeviceEntry[];
  /** LXD's numeric architecture id (not the name). */
  architecture: number;
  stateful: boolean;
  /** Unix seconds. */
  creationDate?: number;
  lastUsedDate?: number;
  expiryDate?: number;
}
export interface RsyncFeatures {
  xattrs?: boolean;
  delete?: boolean;
  compress?: boolean;
  bidirectional?: boolean;
  /** svcd's own (field 1000): the rsync here verifies with xxh128 (LXD peers neither send nor echo it). */
  svcdXxh128?: boolean;
}
export interface BtrfsFeatures {
  migrationHeader?: boolean;
  headerSubvolumes?: boolean;
  headerSubvolumeUuids?: boolean;
}
export interface MigrationHeader {
  fs: MigrationFsType;
  criu?: CriuType;
  idmap?: IdMapEntry[];
  snapshotNames?: string[];
  snapshots?: SnapshotEntry[];
  predump?: boolean;
  rsyncFeatures?: RsyncFeatures;
  refresh?: boolean;
  zfsFeatures?: { compress?: boolean };
  volumeSize?: number;
  btrfsFeatures?: BtrfsFeatures;
  indexHeaderVersion?: number;
}
export interface MigrationControl {
  success: boolean;
  message?: string;
}

/** Bytes from a peer that are not the message they should be (truncated, wrong wire type, a required field missing). */
export class MigrationDecodeError extends Error {
  constructor(
    readonly messageType: string,
    reason: string,
  ) {
    super(`invalid ${messageType} from the migration peer: ${reason}`);
    this.name = 'MigrationDecodeError';
  }
}

/** The message without its undefined fields: proto2 sends every field that is set (false included), none that is absent. */
function definedOnly(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(definedOnly);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).flatMap(([k, v]) => (v === undefined ? [] : [[k, definedOnly(v)]])));
}

// protobufjs camel-cases the .proto's snake_case names (creation_date is creationDate) on both sides.
/** The first enum field (at any depth) whose name the schema does not know, as verify's words. */
function verifyEnums(type: protobuf.Type, value: Record<string, unknown>): string | null {
  for (const field of type.fieldsArray) {
    const v = value[field.name];
    if (v === undefined || v === null) continue;
    const resolved = field.resolve().resolvedType;
    const items = field.repeated && Array.isArray(v) ? v : [v];
    for (const item of items) {
      if (resolved instanceof protobuf.Enum && typeof item === 'string' && !(item in resolved.values))
        return `${field.name}: unknown value ${item}`;
      if (resolved instanceof protobuf.Type && item && typeof item === 'object') {
        const inner = verifyEnums(resolved, item as Record<string, unknown>);
        if (inner) return `${field.name}.${inner}`;
      }
    }
  }
  return null;
}

function encodeWith(type: protobuf.Type, message: object): Uint8Array {
  const wire = definedOnly(message) as Record<string, unknown>;
  // verify the plain object: fromObject would silently drop an unknown enum name
  const invalid = type.verify(type.fromObject(wire)) ?? verifyEnums(type, wire);
  if (invalid) throw new TypeError(`invalid ${type.name}: ${invalid}`);
  return type.encode(type.fromObject(wire)).finish();
}

function decodeWith<T>(type: protobuf.Type, bytes: Uint8Array): T {
  let decoded: protobuf.Message;
  try {
    decoded = type.decode(bytes);
  } catch (e) {
    throw new MigrationDecodeError(type.name, e instanceof Error ? e.message : String(e));
  }
  // defaults: false, so a field the peer did not send stays absent (proto2 presence matters to negotiation)
  return type.toObject(decoded, { enums: String, longs: Number, defaults: false, arrays: false }) as T;
}

export const encodeMigrationHeader = (header: MigrationHeader): Uint8Array => encodeWith(headerType, header);
export const decodeMigrationHeader = (bytes: Uint8Array): MigrationHeader =>
  decodeWith<MigrationHeader>(headerType, bytes);
export const encodeMigrationControl = (control: MigrationControl): Uint8Array => encodeWith(controlType, control);
export const decodeMigrationControl = (bytes: Uint8Array): MigrationControl =>
  decodeWith<MigrationControl>(controlType, bytes);
