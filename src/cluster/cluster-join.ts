/**
 * Both ends of a join. The joiner asks a member of the cluster (`cluster_address`, which must present
 * `cluster_certificate`) to accept it with the trust password, and is answered with the cluster certificate
 * and key, and, when the cluster lives in the embedded engine of its serving member, with a database role of
 * its own: it then restarts on the cluster's database, reached through the database tunnel. On an
 * operator's PostgreSQL (DATABASE_URL) both are on the one database already and nothing restarts.
 */
import { listCertificates } from '../desired/certificates.ts';
import { ConflictError, ForbiddenError, ValidationError } from '../desired/errors.ts';
import {
  checkMemberSources,
  type MemberConfigEntry,
  parseMemberConfig,
  writeMemberConfig,
} from '../desired/member-config.ts';
import { readServerKeys, verifyPassword } from '../desired/server-config.ts';
import type { AgentRestart } from '../agent/types.ts';
import type { Db } from '../db/types.ts';
import type { Operations } from '../operations/index.ts';
import {
  fingerprintOfPem,
  removeClusterCertificate,
  writeClusterCertificate,
  type ClusterCertificate,
} from './cluster-certificate.ts';
import { readClusterDatabase, removeClusterDatabase, writeClusterDatabase } from './cluster-database-file.ts';
import { requestMember } from './member-client.ts';
import { createMemberRole, sweepMemberRoles } from './member-roles.ts';
import { admitMember, countHeld, listMembers, markClustered, readMember } from './members.ts';

/** The trust store's name for the cluster certificate: members call each other with it. */
export const CLUSTER_CERT_NAME = 'svcd-cluster';
/** The database of the serving member's private server that svcd uses. */
const CLUSTER_DATABASE = 'postgres';

export interface JoinRequest {
  server_name?: string | undefined;
  server_address?: string | undefined;
  cluster_address?: string | undefined;
  cluster_certificate?: string | undefined;
  cluster_password?: string | undefined;
  member_config?: unknown[] | undefined;
}

/** What a joiner asks the cluster (POST /internal/cluster/accept). */
export interface AcceptRequest {
  server_name?: string | undefined;
  server_address?: string | undefined;
  password?: string | undefined;
  embedded?: boolean | undefined;
  member_config?: unknown[] | undefined;
}

/** What the cluster answers an accepted joiner. */
export interface Admission {
  certificate: string;
  key: string;
  /** The embedded engine's cluster: where its database is served, and the joiner's role there. */
  database?: { address: string; user: string; password: string; database: string };
}

export interface JoinContext {
  db: Db;
  node: string;
  stateDir: string;
  /** This daemon runs on its private server (no DATABASE_URL): it may serve, or move to, a cluster's database. */
  embedded: boolean;
  serving: { cert: string; key: string; fingerprint: string };
  cert(): ClusterCertificate | undefined;
  setCert(c: ClusterCertificate): void;
  setCertificate(c: { cert: string; key: string }): void;
  restart: AgentRestart;
  ownAddress(given: string | undefined): Promise<string>;
}

/** The joiner's side: accepted by the cluster, then on its database (restarting onto it when it is embedded). */
/**
 * Resolves with the new agent's operations when this daemon restarted onto the cluster's database (it
 * serves from there now), else undefined.
 */
export async function joinCluster(ctx: JoinContext, req: JoinRequest): Promise<{ ops: Operations } | undefined> {
  const { db, node } = ctx;
  if (req.server_name && req.server_name !== node)
    throw new ValidationError(`Invalid "server_name": this member is "${node}" (its SVCD_NODE_NAME)`);
  if ((await readMember(db, node)).clustered) throw new ValidationError('This server is already clustered');
  if (!req.cluster_certificate)
    throw new ValidationError('Invalid "cluster_certificate": the cluster\'s certificate is required');
  if (!req.cluster_password)
    throw new ValidationError('Invalid "cluster_password": the cluster\'s trust password is required');
  // Checked here for their form and this host's state directory; the cluster checks the pools and networks named.
  const memberConfig = parseMemberConfig(req.member_config);
  checkMemberSources(memberConfig, ctx.stateDir);
  let pin: string;
  try {
    pin = fingerprintOfPem(req.cluster_certificate);
  } catch {
    throw new ValidationError('Invalid "cluster_certificate": not a PEM certificate');
  }
  const address = await ctx.ownAddress(req.server_address);
  const held = await countHeld(db, node);
  if (held.containers || held.volumes)
    throw new ValidationError(
      `This member holds ${held.containers} container(s) and ${held.volumes} custom volume(s): only an empty server can join a cluster`,
    );
  const answer = await askToJoin(
    ctx,
    { address: req.cluster_address ?? '', pin },
    {
      server_name: node,
      server_address: address,
      password: req.cluster_password,
      embedded: ctx.embedded,
      member_config: memberConfig,
    },
  );
  const fp = fingerprintOfPem(answer.certificate);
  const cert = { cert: answer.certificate, key: answer.key, fingerprint: fp };
  if (answer.database) {
    const database = answer.database;
    // The cluster's database is another member's private server: this daemon restarts onto it, and answers
    // once it serves from there. Should that fail, it starts again on its own database, unchanged.
    return ctx.restart(`joined the cluster: its database is served by ${database.address}`, {
      stopDatabaseServer: true,
      prepare: async () => {
        await writeClusterCertificate(ctx.stateDir, cert);
        await writeClusterDatabase(ctx.stateDir, { mode: 'member', pin: fp, ...database });
      },
      undo: async () => {
        await removeClusterDatabase(ctx.stateDir);
        await removeClusterCertificate(ctx.stateDir);
      },
    });
  }
  // One database: the cluster certificate the accepting member trusts must be in this member's database too.
  if (!(await listCertificates(db)).some((c) => c.fingerprint === fp && c.name === CLUSTER_CERT_NAME))
    throw new ValidationError(
      "The cluster keeps its state in another database: start this member with the cluster's DATABASE_URL to join it",
    );
  await writeClusterCertificate(ctx.stateDir, cert);
  ctx.setCert(cert);
  await markClustered(db, node, { address, roles: ['database'] });
  Object.assign(ctx.serving, cert);
  ctx.setCertificate(cert);
  return undefined;
}

async function askToJoin(
  ctx: JoinContext,
  at: { address: string; pin: string },
  body: {
    server_name: string;
    server_address: string;
    password: string;
    embedded: boolean;
    member_config: MemberConfigEntry[];
  },
): Promise<Admission> {
  let res: Awaited<ReturnType<typeof requestMember>>;
  try {
    res = await requestMember({
      address: at.address,
      pin: at.pin,
      client: ctx.serving,
      method: 'POST',
      path: '/internal/cluster/accept',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify(body)),
      timeoutMs: 15_000,
    });
  } catch (e) {
    throw new ValidationError(
      `Invalid "cluster_address": cannot reach the cluster at "${at.address}": ${(e as Error).message}`,
    );
  }
  const answer = JSON.parse(res.body.toString() || '{}') as { error?: string; metadata?: Partial<Admission> };
  if (res.status === 403)
    throw new ForbiddenError(`The cluster refused to accept this member: ${answer.error ?? 'wrong trust password'}`);
  if (res.status === 409) throw new ConflictError(`The cluster refused to accept this member: ${answer.error}`);
  const m = answer.metadata;
  if (res.status !== 200 || !m?.certificate || !m.key)
    throw new ValidationError(`The cluster refused to accept this member: ${answer.error ?? `status ${res.status}`}`);
  return { certificate: m.certificate, key: m.key, ...(m.database ? { database: m.database } : {}) };
}

/**
 * The cluster's side. On an operator's database the joiner must already run on it (a row of its own); on the
 * embedded engine the serving member makes the joiner's row and role (another member passes the request
 * on to it: only it may make roles).
 */
export async function acceptMember(ctx: JoinContext, req: AcceptRequest): Promise<Admission> {
  const { db, node } = ctx;
  const cert = ctx.cert();
  if (!cert || !(await readMember(db, node)).clustered) throw new ValidationError('This server is not clustered');
  const { 'core.trust_password': hash } = await readServerKeys(db, node, ['core.trust_password']);
  if (!req.password || !(await verifyPassword(req.password, hash)))
    throw new ForbiddenError('not authorized: wrong or missing trust password');
  const name = req.server_name ?? '';
  if (!/^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$/.test(name))
    throw new ValidationError(`Invalid "server_name": "${name}" is not a member name`);
  const memberConfig = parseMemberConfig(req.member_config);
  const record = ctx.embedded ? await readClusterDatabase(ctx.stateDir) : undefined;
  if (record?.mode === 'member') return passToServingMember(ctx, cert, record.address, req);
  if (record?.mode === 'served') {
    if (!req.embedded)
      throw new ValidationError(
        "The cluster's database is its bootstrap member's embedded server: start the joining member without DATABASE_URL",
      );
    const address = req.server_address ?? '';
    const own = await readMember(db, node);
    const role = await db.transaction(async (tx) => {
      await admitMember(tx, { name, address, roles: ['database'] });
      await writeMemberConfig(tx, name, memberConfig);
      return createMemberRole(tx, name);
    });
    await sweepMemberRoles(db, [...(await listMembers(db, { clusteredOnly: true })).map((m) => m.name)]);
    return {
      certificate: cert.cert,
      key: cert.key,
      database: { address: own.address, ...role, database: CLUSTER_DATABASE },
    };
  }
  const joiner = (await listMembers(db)).find((m) => m.name === name);
  if (!joiner)
    throw new ValidationError(
      `No daemon named "${name}" uses the cluster's database: start it with the cluster's DATABASE_URL`,
    );
  if (joiner.clustered) throw new ConflictError(`Cluster member "${name}" already exists`);
  await db.transaction((tx) => writeMemberConfig(tx, name, memberConfig));
  return { certificate: cert.cert, key: cert.key };
}

async function passToServingMember(
  ctx: JoinContext,
  cert: ClusterCertificate,
  address: string,
  req: object,
): Promise<Admission> {
  const res = await requestMember({
    address,
    pin: cert.fingerprint,
    client: cert,
    method: 'POST',
    path: '/internal/cluster/accept',
    headers: { 'content-type': 'application/json', 'x-svcd-forwarded': ctx.node },
    body: Buffer.from(JSON.stringify(req)),
    timeoutMs: 15_000,
  });
  const answer = JSON.parse(res.body.toString() || '{}') as { error?: string; metadata?: Admission };
  if (res.status === 200 && answer.metadata) return answer.metadata;
  const message = answer.error ?? `the serving member answered ${res.status}`;
  if (res.status === 403) throw new ForbiddenError(message);
  if (res.status === 409) throw new ConflictError(message);
  throw new ValidationError(message);
}
