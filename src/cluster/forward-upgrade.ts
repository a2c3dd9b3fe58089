import type http from 'node:http';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { Db } from '../db/types.ts';
import { fingerprintOfDer } from '../desired/certificates.ts';
import type { ClusterService } from './cluster-service.ts';
import { FORWARDED_HEADER } from './forward-request.ts';
import { locateSubject } from './locate-request.ts';
import { MEMBER_CONNECT_MS, splitAddress } from './member-client.ts';

/**
 * An operation's websocket (exec, console, migration) on another member: the upgrade request is sent on to
 * that member over TLS with the cluster certificate, and the two sockets are joined byte for byte. The
 * websocket secret is checked by the member that issued it.
 */
export function createUpgradeForwarder(deps: { db: Db; node: string; cluster: ClusterService }) {
  return async (req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<boolean> => {
    const cert = deps.cluster.certificate();
    if (!cert) return false;
    const m = /^\/1\.0\/operations\/([0-9a-f-]{36})\/websocket$/i.exec(new URL(req.url ?? '/', 'http://svcd').pathname);
    if (!m) return false;
    const id = m[1]!;
    const member = deps.cluster.operationMember(id) ?? (await locateSubject(deps.db, { kind: 'operation', id }));
    if (!member || member === deps.node) return false;
    const to = await deps.cluster.reach(member).catch(() => undefined);
    if (!to) return false;
    const { host, port } = splitAddress(to.address);
    const up = tls.connect({ host, port, cert: cert.cert, key: cert.key, rejectUnauthorized: false });
    const ok = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), MEMBER_CONNECT_MS);
      up.once('secureConnect', () => {
        clearTimeout(timer);
        const peer = up.getPeerX509Certificate();
        resolve(!!peer && fingerprintOfDer(peer.raw) === cert.fingerprint);
      });
      up.once('error', () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (!ok) {
      up.destroy();
      return false;
    }
    const lines = [`${req.method} ${req.url} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      if (req.rawHeaders[i]!.toLowerCase() !== FORWARDED_HEADER)
        lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    lines.push(`${FORWARDED_HEADER}: ${deps.node}`);
    up.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) up.write(head);
    socket.pipe(up);
    up.pipe(socket);
    const close = () => {
      socket.destroy();
      up.destroy();
    };
    socket.on('error', close);
    up.on('error', close);
    socket.on('close', close);
    up.on('close', close);
    return true;
  };
}
