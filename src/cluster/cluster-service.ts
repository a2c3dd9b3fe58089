import type { AgentRestart } from '../agent/types.ts';
import type { Db } from '../db/types.ts';
import { addCertificate, listCertificates } from '../desired/certificates.ts';
import { ConflictError, NotFoundError, ValidationError } from '../desired/errors.ts';
import { listMemberConfigKeys } from '../desired/member-config.ts';
import { readServerKeys } from '../desired/server-config.ts';
import {
  fingerprintOfPem,
  readClusterCertificate,
  removeClusterCertificate,
  writeClusterCertificate,
  type ClusterCertificate,
} from './cluster-certificate.ts';
import { readClusterDatabase, removeClusterDatabase, writeClusterDatabase } from './cluster-database-file.ts';
import {
  type AcceptRequest,
  acceptMember,
  CLUSTER_CERT_NAME,
  joinCluster,
  type JoinContext,
  type JoinRequest,
} from './cluster-join.ts';
import { requestMember } from './member-client.ts';
import { createMemberReach } from './member-reach.ts';
import { sweepMemberRoles } from './member-roles.ts';
import {
  countHeld,
  deleteMember,
  leastLoadedMember,
  listMembers,
  markClustered,
  markUnclustered,
  readMember,
  renameMember,
  type MemberView,
} from './members.ts';
import { removeHeldRows } from './remove-held-rows.ts';

export { CLUSTER_CERT_NAME, type JoinRequest } from './cluster-join.ts';

export interface ClusterServiceDeps {
  db: Db;
  node: string;
  stateDir: string;
  /** What this member presents now (its server certificate until it is clustered); changed in place on join. */
  serving: { cert: string; key: string; fingerprint: string };
  /** Present another certificate on the HTTPS listener (the cluster's, after a join). */
  setCertificate(c: { cert: string; key: string }): void;
  /** Replace the agent in place (src/agent.ts): when what it is built on changes (its database). */
  restart: AgentRestart;
  /** This daemon's database is its own private server (the embedded engine, no DATABASE_URL). */
  databaseServed: boolean;
  /** After a member was removed with force (what waited for its part of pools and networks goes on). */
  onMemberRemoved?: () => Promise<void>;
}

/**
 * The cluster as one member sees it: bootstrap, join and leave; the members; where an object is and how to
 * reach the member holding it. Every member reads and writes one PostgreSQL database, so there is no
 * consensus here: a member row, a heartbeat, and one certificate presented by all.
 */
export function createClusterService(deps: ClusterServiceDeps) {
  const { db, node } = deps;
  let cert: ClusterCertificate | undefined;
  /** Operations answered through a forward, by id: their row may not be written yet when the client asks next. */
  const opOwners = new Map<string, string>();
  const reachMember = createMemberReach(db);

  async function self(): Promise<MemberView> {
    return readMember(db, node);
  }

  /** The address other members reach this one at: server_address, else a concrete core.https_address. */
  async function ownAddress(given: string | undefined): Promise<string> {
    const { 'core.https_address': https = '' } = await readServerKeys(db, node, ['core.https_address']);
    const address = given || https;
    if (!address)
      throw new ValidationError(
        'Invalid "server_address": set core.https_address first (members reach each other over HTTPS)',
      );
    const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(address);
    if (!m || !(m[1] ?? m[2]) || ['0.0.0.0', '::'].includes(m[1] ?? m[2]!))
      throw new ValidationError(
        `Invalid "server_address": "${address}" is not an address other members can reach (give host:port)`,
      );
    return address;
  }

  async function trustClusterCertificate(pem: string): Promise<void> {
    const fp = fingerprintOfPem(pem);
    if ((await listCertificates(db)).some((c) => c.fingerprint === fp)) return;
    await addCertificate(db, { pem, name: CLUSTER_CERT_NAME, type: 'client' }).catch((e: unknown) => {
      if (!(e instanceof ConflictError)) throw e;
    });
  }

  /** A restart the request's answer must not wait for: started by restartIfPending once that answer is made. */
  let pendingRestart: string | undefined;
  const restartSoon = (reason: string) => {
    pendingRestart = reason;
  };
  const joinContext = (): JoinContext => ({
    db,
    node,
    stateDir: deps.stateDir,
    embedded: deps.databaseServed || tunnelled,
    serving: deps.serving,
    cert: () => cert,
    setCert: (c) => (cert = c),
    setCertificate: deps.setCertificate,
    restart: deps.restart,
    ownAddress,
  });
  /** This daemon's database is another member's private server, through the tunnel. */
  let tunnelled = false;

  return {
    /** Awaited before a request is forwarded to a member (the agent relays that member's events first). */
    beforeForward: async (_m: MemberView): Promise<void> => {},

    async init(): Promise<void> {
      const record = deps.databaseServed ? undefined : await readClusterDatabase(deps.stateDir).catch(() => undefined);
      tunnelled = record?.mode === 'member';
      const me = await self().catch(() => undefined);
      if (me?.clustered) cert = await readClusterCertificate(deps.stateDir);
      if (cert) Object.assign(deps.serving, cert);
      // The serving member drops the roles of members that are gone (only its role may).
      if (cert && this.servesDatabase())
        await sweepMemberRoles(
          db,
          (await listMembers(db, { clusteredOnly: true })).map((m) => m.name),
        );
    },
    /**
     * Start the restart that bootstrap, leave or removal asked for, once the route has made its answer (an
     * operation of this agent): from here on requests wait for the new agent.
     */
    restartIfPending(): void {
      const reason = pendingRestart;
      pendingRestart = undefined;
      if (reason) void deps.restart(reason).catch(() => {});
    },
    /** This member's private server is the cluster's database (the tunnel endpoint serves it). */
    servesDatabase: (): boolean => deps.databaseServed && !!cert,
    /** No query: only this service changes whether this member is clustered (an online member is never force-removed). */
    async clustered(): Promise<boolean> {
      return !!cert;
    },
    /** The certificate and key members call each other with (undefined while not clustered). */
    certificate: () => cert,

    async info() {
      return { server_name: node, enabled: !!cert, member_config: cert ? await listMemberConfigKeys(db) : [] };
    },

    async bootstrap(req: { server_name?: string | undefined; server_address?: string | undefined }): Promise<void> {
      if (req.server_name && req.server_name !== node)
        throw new ValidationError(`Invalid "server_name": this member is "${node}" (its SVCD_NODE_NAME)`);
      if ((await self()).clustered) throw new ValidationError('This server is already clustered');
      const address = await ownAddress(req.server_address);
      // The bootstrap member's own certificate becomes the cluster's (as in LXD): clients that trust it already keep trusting it.
      const own = { cert: deps.serving.cert, key: deps.serving.key };
      await writeClusterCertificate(deps.stateDir, own);
      await trustClusterCertificate(own.cert);
      await markClustered(db, node, { address, roles: ['database'] });
      cert = { ...own, fingerprint: fingerprintOfPem(own.cert) };
      if (deps.databaseServed) {
        // Its private server becomes the cluster's database: opened again as a shared one, whose other
        // writers' commits are listened for (until now it was this process's alone).
        await writeClusterDatabase(deps.stateDir, { mode: 'served' });
        restartSoon('this server bootstrapped a cluster: its database is shared from now on');
      }
    },

    /** Join a cluster (cluster-join.ts); on the embedded engine this daemon restarts onto its database. */
    join: (req: JoinRequest) => joinCluster(joinContext(), req),

    /** On the cluster's side of a join: the trust password checked, the joiner gets the certificate and key. */
    accept: (req: AcceptRequest) => acceptMember(joinContext(), req),

    /** {enabled: false}: the last member may leave (the cluster ends); with others, remove this member instead. */
    async leave(): Promise<void> {
      if (!(await self()).clustered) return;
      const others = (await listMembers(db, { clusteredOnly: true })).filter((m) => m.name !== node);
      if (others.length)
        throw new ValidationError(
          `Other members are in the cluster (${others.map((m) => m.name).join(', ')}): remove this member with DELETE /1.0/cluster/members/${node}`,
        );
      await markUnclustered(db, node);
      cert = undefined;
      await removeClusterCertificate(deps.stateDir);
      if (deps.databaseServed) {
        // Alone again: its database is its own, opened as such.
        await removeClusterDatabase(deps.stateDir);
        restartSoon('this server left its cluster: its database is its own again');
      }
    },

    members: () => listMembers(db, { clusteredOnly: true }),

    async member(name: string): Promise<MemberView> {
      const m = await readMember(db, name);
      if (!m.clustered) throw new NotFoundError(`Cluster member "${name}" not found`);
      return m;
    },

    async rename(from: string, to: string): Promise<void> {
      const m = await this.member(from);
      if (!to) throw new ValidationError('Invalid "server_name": a new name is required');
      if (m.online)
        throw new ValidationError(
          `Cluster member "${from}" is running: stop it, rename it, and start it again with SVCD_NODE_NAME=${to}`,
        );
      await renameMember(db, from, to);
    },

    /**
     * This member leaves the cluster (it must hold nothing), or a dead one is removed with `force`, and
     * the rows of what it held with it (its host is gone with it).
     */
    async remove(name: string, force: boolean): Promise<void> {
      const m = await this.member(name);
      if (name === node) {
        const held = await countHeld(db, node);
        if (held.containers || held.volumes)
          throw new ValidationError(
            `Cluster member "${name}" holds ${held.containers} container(s) and ${held.volumes} custom volume(s): move or delete them first`,
          );
        const others = (await listMembers(db, { clusteredOnly: true })).filter((o) => o.name !== node);
        if (!others.length)
          throw new ValidationError(`Cluster member "${name}" is the last member: disable clustering instead`);
        await markUnclustered(db, node);
        cert = undefined;
        await removeClusterCertificate(deps.stateDir);
        // A member on the serving member's database goes back to its own private server.
        if (tunnelled) {
          await removeClusterDatabase(deps.stateDir);
          restartSoon('this member left the cluster: back on its own database');
        }
        return;
      }
      if (m.online) throw new ConflictError(`Cluster member "${name}" is online: the request goes to it`);
      if (!force)
        throw new ValidationError(
          `Cluster member "${name}" is offline: remove it with force (its containers' rows go with it)`,
        );
      await removeHeldRows(db, name);
      await deleteMember(db, name);
      await deps.onMemberRemoved?.();
      if (this.servesDatabase())
        await sweepMemberRoles(
          db,
          (await this.members()).map((o) => o.name),
        );
    },

    /** Where a create without `target` goes: the online member holding fewest containers (not one in `skip`). */
    placement: async (skip?: ReadonlySet<string>): Promise<string> => (await leastLoadedMember(db, skip)) ?? node,

    rememberOperation(id: string, member: string): void {
      opOwners.set(id, member);
      if (opOwners.size > 10_000) opOwners.delete(opOwners.keys().next().value!);
    },
    operationMember: (id: string): string | undefined => opOwners.get(id),

    /** A request to another member, with the cluster certificate (a member's own verbs: its removal). */
    async callMember(name: string, method: string, path: string) {
      const m = await this.reach(name);
      if (!cert) throw new ValidationError('This server is not clustered');
      return requestMember({
        address: m.address,
        pin: cert.fingerprint,
        client: cert,
        method,
        path,
        headers: { 'x-svcd-forwarded': node },
      });
    },

    /** A member to forward to: online and reachable, or a clear error naming it. */
    reach: reachMember,
  };
}
export type ClusterService = ReturnType<typeof createClusterService>;
