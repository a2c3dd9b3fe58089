/** The agent's ground: its state dir, event bus, logger, database (with its defaults), certificate and operations. */
import { chmod, mkdir } from 'node:fs/promises';
import type { DaemonConfig } from '../config/daemon-config.ts';
import { openDaemonDatabase } from '../db/open-daemon-database.ts';
import { ensureDefaultProject } from '../desired/projects.ts';
import { adoptSharedStatuses } from '../desired/member-status.ts';
import { preloadFacts } from '../desired/reconcile-facts.ts';
import { readClusterCertificate } from '../cluster/cluster-certificate.ts';
import { readClusterDatabase } from '../cluster/cluster-database-file.ts';
import { tunnelSocketForDriver } from '../cluster/database-tunnel.ts';
import { startMember } from '../cluster/start-member.ts';
import { ensureDefaultPool } from '../desired/storage-pools.ts';
import { createEventBus } from '../events/index.ts';
import { runCommand } from '../host/exec.ts';
import { readHostInfo } from '../host/host-info.ts';
import { createPrivatePostgres } from '../host/postgres/private-postgres.ts';
import { createLogger } from '../log.ts';
import { createOperations } from '../operations/index.ts';
import { systemClock } from '../reconcilers/runtime/index.ts';
import { ensureServerCertificate } from '../tls/ensure-server-certificate.ts';
import { readServerPki } from '../tls/read-server-pki.ts';
import type { AgentOptions } from './types.ts';

/**
 * A cluster on the embedded engine: this daemon's private server serves it, or another member's does
 * (reached through the database tunnel with the cluster certificate). DATABASE_URL, when set, is the
 * cluster's database instead.
 */
async function clusterDatabaseOf(config: DaemonConfig) {
  if (config.databaseUrl) return undefined;
  const record = await readClusterDatabase(config.stateDir);
  if (!record) return undefined;
  if (record.mode === 'served') return { served: true as const };
  const client = await readClusterCertificate(config.stateDir);
  if (!client) throw new Error(`${config.stateDir} names the cluster's database but holds no cluster certificate`);
  const { user, password, database, address, pin } = record;
  return {
    url: `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@cluster/${encodeURIComponent(database)}`,
    connect: () => tunnelSocketForDriver({ address, pin, client, timeoutMs: 10_000 }),
  };
}

export type AgentStore = Awaited<ReturnType<typeof openAgentStore>>;

export async function openAgentStore(config: DaemonConfig, opts: AgentOptions) {
  const clock = opts.clock ?? systemClock;
  await mkdir(config.stateDir, { recursive: true, mode: 0o711 });
  // Unprivileged containers' root (a high host uid) must be able to traverse to their rootfs.
  await chmod(config.stateDir, 0o711);
  const bus = createEventBus({ location: config.nodeName });
  const log = createLogger({
    level: config.logLevel,
    bus,
    ...(opts.logDestination ? { destination: opts.logDestination } : {}),
  });
  const { database, server: dbServer } = await openDaemonDatabase({
    stateDir: config.stateDir,
    databaseUrl: config.databaseUrl,
    embedded: config.embeddedDatabase,
    cluster: await clusterDatabaseOf(config),
    createServer: (d) =>
      createPrivatePostgres({
        ...d,
        binDir: config.postgresBinDir,
        run: runCommand,
        log: log.child({ component: 'database' }),
      }),
  });
  const { db } = database;
  // What reconcilers and observers record of the host commits through `relaxed` (Database.relaxed); what
  // users ask for, through `db`.
  const recorded = database.relaxed;
  if (await ensureDefaultProject(db)) await ensureDefaultPool(db, config.stateDir);
  // This daemon's member row and heartbeat (one per daemon on a shared database).
  const member = await startMember({ db, name: config.nodeName, clock, log: log.child({ component: 'cluster' }) });
  // Before the facts are preloaded: an earlier svcd's one status row per pool and network becomes this member's.
  const adopted = await adoptSharedStatuses(db, config.nodeName);
  if (adopted) log.info({ rows: adopted }, 'status rows of pools and networks are now kept per member');
  await preloadFacts(db);
  const [serverCert, host] = await Promise.all([ensureServerCertificate(config.stateDir), readHostInfo()]);
  const pki = await readServerPki(config.stateDir, serverCert.cert);
  if (pki)
    log.info(
      { crl: !!pki.crl },
      'PKI mode (server.ca): a client certificate must be issued by the CA, not revoked, and in the trust store',
    );
  if (pki?.warning) log.warn(pki.warning);

  const ops = createOperations({
    db,
    localWrites: database.localWrites,
    bus,
    clock,
    node: config.nodeName,
    log: log.child({ component: 'operations' }),
    ...opts.operations,
  });
  const orphaned = await ops.recover();
  if (orphaned) log.warn({ count: orphaned }, 'operations left running by a previous svcd ended as Failure');
  ops.start();

  return { clock, bus, log, database, dbServer, db, recorded, serverCert, host, pki, ops, member };
}
