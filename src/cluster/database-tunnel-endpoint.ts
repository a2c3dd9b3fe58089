import type http from 'node:http';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { fingerprintOfDer } from '../desired/certificates.ts';
import { privatePostgresDirOf } from '../host/postgres/private-postgres-args.ts';
import { DATABASE_TUNNEL_PATH, refuseTunnel, serveDatabaseTunnel } from './database-tunnel.ts';
import { MEMBER_ROLE_PREFIX } from './member-roles.ts';

/**
 * The HTTPS listener's handler of the database tunnel (database-tunnel.ts): only on the member whose private
 * server is the cluster's database, and only for a caller presenting the cluster certificate itself.
 */
export function createDatabaseTunnelEndpoint(deps: {
  cluster: { servesDatabase(): boolean; certificate(): { fingerprint: string } | undefined };
  stateDir: string;
  log: Logger;
}) {
  const socketPath = path.join(privatePostgresDirOf(deps.stateDir), '.s.PGSQL.5432');
  return async (req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<boolean> => {
    if (new URL(req.url ?? '/', 'http://svcd').pathname !== DATABASE_TUNNEL_PATH) return false;
    if (!deps.cluster.servesDatabase()) {
      refuseTunnel(socket, 404, "This member does not serve the cluster's database");
      return true;
    }
    const peer = (req.socket as TLSSocket).getPeerX509Certificate?.();
    const cert = deps.cluster.certificate();
    if (!cert || !peer || fingerprintOfDer(peer.raw) !== cert.fingerprint) {
      refuseTunnel(socket, 403, "not authorized: the cluster's database is for its members (the cluster certificate)");
      return true;
    }
    serveDatabaseTunnel(socket, head, {
      socketPath,
      mayLogIn: (user) => user.startsWith(MEMBER_ROLE_PREFIX),
      onError: (e) => deps.log.warn({ err: e }, "a member's database tunnel failed"),
    });
    return true;
  };
}
