import path from 'node:path';
import * as v from 'valibot';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

const EMBEDDED_DATABASES = ['postgres', 'pglite'] as const;

const DaemonConfigSchema = v.object({
  stateDir: v.pipe(
    v.string(),
    v.check((s) => path.isAbsolute(s), 'SVCD_DIR must be an absolute path'),
    v.check(
      (s) => Buffer.byteLength(path.join(s, 'unix.socket')) < 108,
      'SVCD_DIR is too long for a unix socket path (at most 96 bytes)',
    ),
  ),
  databaseUrl: v.optional(
    v.pipe(
      v.string(),
      v.check((s) => /^postgres(ql)?:\/\//.test(s), 'DATABASE_URL must start with postgres:// or postgresql://'),
      v.check((s) => URL.canParse(s), 'DATABASE_URL is not a valid URL'),
    ),
  ),
  /** Without DATABASE_URL: a private PostgreSQL server in the state dir (`postgres`), or PGlite in-process (`pglite`; also when absent). */
  embeddedDatabase: v.optional(
    v.picklist(EMBEDDED_DATABASES, `SVCD_EMBEDDED_DATABASE must be one of ${EMBEDDED_DATABASES.join(', ')}`),
  ),
  /**
   * The bin directory of the private server's PostgreSQL (pg_ctl, postgres, initdb): unset, Debian's
   * /usr/lib/postgresql/<major>/bin of the data's major. For a server built elsewhere, and for tests.
   */
  postgresBinDir: v.optional(
    v.pipe(
      v.string(),
      v.check((s) => path.isAbsolute(s), 'SVCD_POSTGRES_BIN must be an absolute path'),
    ),
  ),
  logLevel: v.picklist(LOG_LEVELS, `SVCD_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`),
  nodeName: v.pipe(
    v.string(),
    v.regex(/^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$/, 'SVCD_NODE_NAME must be a host name (letters, digits, dots, dashes)'),
  ),
  /** Where gpu/usb/infiniband devices are looked up: /sys and /dev, or a fake tree of each (tests without the hardware). */
  sysfsRoot: v.optional(
    v.pipe(
      v.string(),
      v.check((s) => path.isAbsolute(s), 'SVCD_SYSFS_ROOT must be an absolute path'),
    ),
  ),
  devRoot: v.optional(
    v.pipe(
      v.string(),
      v.check((s) => path.isAbsolute(s), 'SVCD_DEV_ROOT must be an absolute path'),
    ),
  ),
});
export type DaemonConfig = v.InferOutput<typeof DaemonConfigSchema>;

export class DaemonConfigError extends Error {}

/** Build the daemon settings from an environment map (only main.ts passes process.env). */
export function loadDaemonConfig(env: Record<string, string | undefined>, hostname: string): DaemonConfig {
  const raw = {
    stateDir: env.SVCD_DIR || '/var/lib/svcd',
    databaseUrl: env.DATABASE_URL || undefined,
    embeddedDatabase: env.SVCD_EMBEDDED_DATABASE || 'postgres',
    postgresBinDir: env.SVCD_POSTGRES_BIN || undefined,
    logLevel: env.SVCD_LOG_LEVEL || 'info',
    nodeName: env.SVCD_NODE_NAME || hostname.split('.')[0] || 'none',
    sysfsRoot: env.SVCD_SYSFS_ROOT || undefined,
    devRoot: env.SVCD_DEV_ROOT || undefined,
  };
  const res = v.safeParse(DaemonConfigSchema, raw);
  if (!res.success) throw new DaemonConfigError(`invalid settings: ${res.issues.map((i) => i.message).join('; ')}`);
  return { ...res.output, stateDir: path.resolve(res.output.stateDir) };
}
