import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { fingerprintOfDer } from '../desired/certificates.ts';

/** A member that does not answer within this is reported at once: a request never hangs on a dead member. */
export const MEMBER_CONNECT_MS = 3_000;

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
        cert: opts.client.cert,
        key: opts.client.key,
        // Verified below by pin: cluster certificates are self-signed.
        rejectUnauthorized: false,
        headers: { ...opts.headers, ...(opts.body ? { 'content-length': String(opts.body.length) } : {}) },
        agent: false,
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
    const connectTimer = setTimeout(
      () => req.destroy(new Error(`no answer from ${opts.address} within ${MEMBER_CONNECT_MS / 1000} s`)),
      MEMBER_CONNECT_MS,
    );
    req.setTimeout(opts.timeoutMs ?? 60_000, () => req.destroy(new Error(`request to ${opts.address} timed out`)));
    req.on('socket', (s) =>
      s.once('secureConnect', () => {
        clearTimeout(connectTimer);
        const peer = (s as TLSSocket).getPeerX509Certificate?.();
        if (!peer || fingerprintOfDer(peer.raw) !== opts.pin)
          req.destroy(new Error(`${opts.address} does not present the cluster certificate`));
      }),
    );
    req.on('error', (e) => {
      clearTimeout(connectTimer);
      reject(e);
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
