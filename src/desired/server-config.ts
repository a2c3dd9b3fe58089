import { randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { and, eq, inArray, or, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/types.ts';
import { isBool, type ValueCheck } from './config-keys.ts';
import { parseBool } from '../util/parse-bool.ts';
import { StaleWriteError, ValidationError } from './errors.ts';
import { serverConfig } from './schema/index.ts';

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, len: number) => Promise<Buffer>;

/** `host:port`, `[v6]:port`, `host`, or `:port`; empty = no HTTPS listener. */
export const checkListenAddress: ValueCheck = (v) => {
  if (v === '') return undefined;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]*))(?::(\d{1,5}))?$/.exec(v);
  if (!m) return 'must be an address such as 127.0.0.1:8443, [::]:8443 or :8443';
  const port = m[3] === undefined ? 8443 : Number(m[3]);
  if (port < 1 || port > 65535) return 'port must be between 1 and 65535';
  return undefined;
};

/** `core.debug_address`: an address with its port (as LXD's validator wants), or empty. */
export const checkDebugAddress: ValueCheck = (v) => {
  if (v === '') return undefined;
  if (!/:\d{1,5}$/.test(v)) return 'must be an address with a port, such as 127.0.0.1:8444';
  return checkListenAddress(v);
};

/** A count of hours or days: a non-negative decimal number (fractions allowed: 0.001 days is 86.4 s). */
export const nonNegativeNumber: ValueCheck = (v) =>
  /^\d+(\.\d+)?$/.test(v) ? undefined : 'must be a non-negative number';

/** Image cache and refresh settings, with LXD's defaults. */
export function imageCacheSettings(config: Record<string, string>): {
  autoUpdateCached: boolean;
  autoUpdateIntervalHours: number;
  remoteCacheExpiryDays: number;
} {
  const num = (k: string, dflt: number) =>
    config[k] !== undefined && nonNegativeNumber(config[k]) === undefined ? Number(config[k]) : dflt;
  return {
    autoUpdateCached:
      config['images.auto_update_cached'] === undefined || parseBool(config['images.auto_update_cached']),
    autoUpdateIntervalHours: num('images.auto_update_interval', 6),
    remoteCacheExpiryDays: num('images.remote_cache_expiry', 10),
  };
}

/**
 * Compression of backups: GNU tar's compressors this host has (gzip, bzip2, xz, zstd), or `none` (a plain
 * tarball). LXD takes any command on PATH; svcd takes what its import can sniff back with certainty, so
 * not lzma (its three-byte magic is a guess).
 */
export const BACKUP_COMPRESSION = ['none', 'gzip', 'bzip2', 'xz', 'zstd'];
/** Compression of published images: the backup ones plus lzma (the image readers take it). */
export const IMAGE_COMPRESSION = [...BACKUP_COMPRESSION, 'lzma'];
/** LXD's default for both when neither the request nor the server config names one. */
export const DEFAULT_COMPRESSION = 'gzip';

const oneOf =
  (list: readonly string[]): ValueCheck =>
  (v) =>
    list.includes(v) ? undefined : `must be one of ${list.join(', ')}`;

/**
 * The compression a request gets: its own `compression_algorithm`, else the server key, else gzip; an
 * unknown one is a 400 naming the request's key (the server key was checked when it was written).
 */
export function resolveCompression(
  requested: string | undefined,
  serverValue: string | undefined,
  allowed: readonly string[],
): string {
  const compression = requested || serverValue || DEFAULT_COMPRESSION;
  const err = oneOf(allowed)(compression);
  if (err) throw new ValidationError(`Invalid compression_algorithm "${compression}": ${err}`);
  return compression;
}

/** Server keys that really work, and whether they are member-local. */
const SERVER_KEYS: Record<string, { check: ValueCheck; local?: boolean; secret?: boolean }> = {
  'core.https_address': { check: checkListenAddress, local: true },
  'core.debug_address': { check: checkDebugAddress, local: true },
  'core.trust_password': { check: () => undefined, secret: true },
  'core.https_allowed_credentials': { check: isBool },
  'images.auto_update_cached': { check: isBool },
  'images.auto_update_interval': { check: nonNegativeNumber },
  'images.remote_cache_expiry': { check: nonNegativeNumber },
  'images.compression_algorithm': { check: oneOf(IMAGE_COMPRESSION) },
  'backups.compression_algorithm': { check: oneOf(BACKUP_COMPRESSION) },
  // Seconds without a heartbeat before a member is shown Offline (cluster-wide).
  'cluster.offline_threshold': {
    check: (v) => (/^[1-9]\d{0,5}$/.test(v) ? undefined : 'must be a whole number of seconds'),
  },
};

export function validateServerConfig(config: Record<string, string>): void {
  for (const [k, val] of Object.entries(config)) {
    const spec = SERVER_KEYS[k];
    if (!spec) throw new ValidationError(`Unknown server config key "${k}"`);
    const err = spec.check(val);
    if (err) throw new ValidationError(`Invalid value for server config key "${k}": ${err}`);
  }
}

/** Stored server config as seen by this member (its local keys plus the cluster-wide ones). */
export async function readServerConfig(db: DbOrTx, node: string): Promise<Record<string, string>> {
  const rows = await db
    .select()
    .from(serverConfig)
    .where(or(eq(serverConfig.node, ''), eq(serverConfig.node, node)));
  return Object.fromEntries(rows.map((r) => [r.key, r.value]));
}

/** The config as the API shows it: secrets are never returned, only that they are set. */
export function renderServerConfig(stored: Record<string, string>): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (const [k, val] of Object.entries(stored)) out[k] = SERVER_KEYS[k]?.secret ? true : val;
  return out;
}

export async function hashPassword(pw: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(pw, salt, 32);
  return `scrypt$${salt.toString('hex')}$${hash.toString('hex')}`;
}

export async function verifyPassword(pw: string, stored: string | undefined): Promise<boolean> {
  if (!stored) return false;
  const [alg, saltHex, hashHex] = stored.split('$');
  if (alg !== 'scrypt' || !saltHex || !hashHex) return false;
  const expected = Buffer.from(hashHex, 'hex');
  const got = await scrypt(pw, Buffer.from(saltHex, 'hex'), expected.length);
  return timingSafeEqual(got, expected);
}

/**
 * Compute the new stored config from a request. `replace` (PUT) drops keys not given; PATCH keeps
 * them. A secret given as boolean `true` (what GET shows) keeps the stored hash; a new secret is hashed.
 */
export async function computeServerConfig(
  current: Record<string, string>,
  request: Record<string, string | number | boolean>,
  replace: boolean,
): Promise<Record<string, string>> {
  const next: Record<string, string> = replace ? {} : { ...current };
  for (const [k, val] of Object.entries(request)) {
    const spec = SERVER_KEYS[k];
    if (spec?.secret && val === true) {
      if (current[k] !== undefined) next[k] = current[k]!;
      continue;
    }
    const s = String(val);
    if (s === '') {
      delete next[k];
      continue;
    }
    next[k] = s;
  }
  validateServerConfig(next);
  for (const [k, spec] of Object.entries(SERVER_KEYS)) {
    if (spec.secret && next[k] !== undefined && next[k] !== current[k]) next[k] = await hashPassword(next[k]!);
  }
  return next;
}

/** An arbitrary constant: the transaction advisory lock that serializes writes of the server config. */
const SERVER_CONFIG_LOCK = 7_715_104_212;

const sameConfig = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, val]) => b[k] === val);

/**
 * Write the whole config of this member (its local keys + the cluster-wide keys). Writers take one
 * lock for their transaction (the config is several rows, possibly none to lock); with `expected` (the
 * config as the caller read it and computed `next` from) the write happens only if it is still so,
 * else StaleWriteError and nothing is written.
 */
export async function writeServerConfig(
  db: Db,
  node: string,
  next: Record<string, string>,
  expected?: Record<string, string>,
): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${SERVER_CONFIG_LOCK})`);
    if (expected && !sameConfig(await readServerConfig(tx, node), expected))
      throw new StaleWriteError('The server configuration');
    await tx.delete(serverConfig).where(or(eq(serverConfig.node, ''), eq(serverConfig.node, node)));
    const rows = Object.entries(next).map(([key, value]) => ({
      node: SERVER_KEYS[key]?.local ? node : '',
      key,
      value,
    }));
    if (rows.length) await tx.insert(serverConfig).values(rows);
  });
}

export async function readServerKeys(db: DbOrTx, node: string, keys: string[]): Promise<Record<string, string>> {
  const rows = await db
    .select()
    .from(serverConfig)
    .where(and(inArray(serverConfig.key, keys), or(eq(serverConfig.node, ''), eq(serverConfig.node, node))));
  return Object.fromEntries(rows.map((r) => [r.key, r.value]));
}

/** One member-local key of a member (written when the cluster accepts it, before it runs on the database). */
export async function writeMemberKey(tx: DbOrTx, node: string, key: string, value: string): Promise<void> {
  await tx
    .insert(serverConfig)
    .values({ node, key, value })
    .onConflictDoUpdate({ target: [serverConfig.node, serverConfig.key], set: { value } });
}

/** A member's local keys follow its rename; `to` '' drops them (the member was removed). */
export async function moveMemberKeys(tx: DbOrTx, from: string, to: string): Promise<void> {
  if (to === '') await tx.delete(serverConfig).where(eq(serverConfig.node, from));
  else await tx.update(serverConfig).set({ node: to }).where(eq(serverConfig.node, from));
}
