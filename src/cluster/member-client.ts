import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { fingerprintOfDer } from '../desired/certificates.ts';

/** A member that does not answer within this is reported at once: a request never hangs on a dead member. */
export const MEMBER_CONNECT_MS = 3_000;

/**
 * The request never reached the member: no connection (refused, unreachable, or none within MEMBER_CONNECT_MS),
 * or the peer is not the cluster. Nothing was sent, so a caller may safely send it elsewhere.
 */
export class MemberNotReached extends Error {}

/**
 * Connections to members are kept and reused (a forwarded create+start is four requests: one TLS handshake
 * instead of four). One agent per client certificate and pin; idle connections close after IDLE_MS, well
 * within the listener's keep-alive (api/listeners.ts), so a reused one is not being closed by the other side.
 */
const IDLE_MS = 20_000;
const agents = new Map<string, https.Agent>();
/** Sockets whose peer presented the pinned certificate: reused without a new check. */
const verified = new WeakSet<object>();
function agentFor(client: { cert: string; key: string }, pin: string): https.Agent {
  const key = `${pin}\0${client.cert}`;
  let agent = agents.get(key);
  if (!agent) {
    // Forgotten, not destroyed: requests under way on it finish; its idle connections close after IDLE_MS.
    if (agents.size >= 16) agents.delete(agents.keys().next().value!);
    // Verified by pin (requestMember): cluster certificates are self-signed.
    // No TLS session resumption: every new connection presents the certificate the pin checks.
    agent = new https.Agent({
      maxCachedSessions: 0,
      keepAlive: true,
      timeout: IDLE_MS,
      cert: client.cert,
      key: client.key,
      rejectUnauthorized: false,
    });
    agents.set(key, agent);
  }
  return agent;
}

export interface MemberResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * One HTTPS request to another member (or to a cluster being joined): presents `client` as its client
 * certificate and accepts only a server presenting the certificate whose SHA-256 is `pin`, so a member
 * talks to the cluster and nothing else. `address` is host:port.
 */
export function requestMember(opts: {
  address: string;
  pin: string;
  client: { cert: string; key: string };
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | undefined;
  /** Whole-request limit (default 60 s); the connection itself is limited to MEMBER_CONNECT_MS. */
  timeoutMs?: number;
}): Promise<MemberResponse> {
  const { host, port } = splitAddress(opts.address);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host,
        port,
        method: opts.method,
        path: opts.path,
        headers: { ...opts.headers, ...(opts.body ? { 'content-length': String(opts.body.length) } : {}) },
        agent: agentFor(opts.client, opts.pin),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 500, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    let reached = false;
    const connectTimer = setTimeout(
      () => req.destroy(new MemberNotReached(`no answer from ${opts.address} within ${MEMBER_CONNECT_MS / 1000} s`)),
      MEMBER_CONNECT_MS,
    );
    req.setTimeout(opts.timeoutMs ?? 60_000, () => req.destroy(new Error(`request to ${opts.address} timed out`)));
    req.on('socket', (s) => {
      if (verified.has(s)) {
        clearTimeout(connectTimer);
        reached = true;
        return;
      }
      s.once('secureConnect', () => {
        clearTimeout(connectTimer);
        const peer = (s as TLSSocket).getPeerX509Certificate?.();
        if (!peer || fingerprintOfDer(peer.raw) !== opts.pin)
          return req.destroy(new MemberNotReached(`${opts.address} does not present the cluster certificate`));
        verified.add(s);
        reached = true;
      });
    });
    req.on('error', (e) => {
      clearTimeout(connectTimer);
      reject(reached || e instanceof MemberNotReached ? e : new MemberNotReached(e.message, { cause: e }));
    });
    req.on('close', () => clearTimeout(connectTimer));
    req.end(opts.body);
  });
}

/** host:port → parts; `[v6]:port` too. */
export function splitAddress(address: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(address);
  if (!m) throw new Error(`not a host:port address: ${address}`);
  return { host: m[1] ?? m[2]!, port: Number(m[3]) };
}
