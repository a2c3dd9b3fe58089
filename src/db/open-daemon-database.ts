import type { Duplex } from 'node:stream';
import { isStaleServerError } from '../host/postgres/compute-server-adoption.ts';
import type { PrivatePostgres, PrivatePostgresDeps } from '../host/postgres/private-postgres.ts';
import { openDatabase } from './open-database.ts';
import type { Database } from './types.ts';

/**
 * svcd's private PostgreSQL server takes this many connections: PGlite, the other embedded engine, has
 * one; four let a burst of reconciles overlap their round trips, and each more backend costs ~3 MiB PSS.
 */
const PRIVATE_POOL_MAX = 4;
/**
 * ...and closes a connection other than the first once it has been idle this long (s): a burst's backends
 * (16 MiB of RSS each) are gone 5 s after it, and the next burst pays ~3 ms to open one again. At idle the
 * observers' queries keep the first one (tiered-client.ts).
 */
const PRIVATE_IDLE_TIMEOUT_S = 5;

/**
 * The daemon's database: `DATABASE_URL`'s server when set; else the embedded engine, by default a
 * private PostgreSQL server in the state dir (created, adopted or started, then supervised; see
 * host/postgres/private-postgres.ts), or PGlite in-process (`embedded: 'pglite'`, or when unset).
 */
export async function openDaemonDatabase(deps: {
  stateDir: string;
  databaseUrl?: string | undefined;
  embedded?: 'postgres' | 'pglite' | undefined;
  createServer: (d: Pick<PrivatePostgresDeps, 'stateDir'>) => PrivatePostgres;
  /**
   * A cluster on the embedded engine (cluster/cluster-database-file.ts): `served`, this daemon's private
   * server is the cluster's database, shared with the other members (their commits are listened for); or
   * the cluster's database of another member, reached by `connect` (a tunnel) as the role in `url`.
   */
  cluster?: { served: true } | { url: string; connect: () => Promise<Duplex> } | undefined;
}): Promise<{ database: Database; server?: PrivatePostgres }> {
  const cluster = deps.cluster;
  if (cluster && 'connect' in cluster)
    return {
      database: await openDatabase({
        stateDir: deps.stateDir,
        databaseUrl: cluster.url,
        connect: cluster.connect,
        poolMax: PRIVATE_POOL_MAX,
        idleTimeoutS: PRIVATE_IDLE_TIMEOUT_S,
      }),
    };
  if (deps.databaseUrl || deps.embedded !== 'postgres')
    return { database: await openDatabase({ stateDir: deps.stateDir, databaseUrl: deps.databaseUrl }) };
  const server = deps.createServer({ stateDir: deps.stateDir });
  const { url, how } = await server.ensure();
  const open = () =>
    openDatabase({
      stateDir: deps.stateDir,
      databaseUrl: url,
      poolMax: PRIVATE_POOL_MAX,
      idleTimeoutS: PRIVATE_IDLE_TIMEOUT_S,
      soleWriter: !cluster,
    });
  let database: Database;
  try {
    database = await open();
  } catch (e) {
    // An adopted postmaster whose binary was replaced, when /proc could not tell (ensure compares the
    // binaries first): its new backends cannot load the installed extension libraries. Once, on the installed binary.
    if (how !== 'adopted' || !isStaleServerError(e)) throw e;
    await server.restart(`the adopted server failed its first queries: ${e instanceof Error ? e.message : String(e)}`);
    database = await open();
  }
  server.supervise();
  return { database, server };
}
