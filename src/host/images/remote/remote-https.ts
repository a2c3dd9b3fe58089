import { X509Certificate } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { PeerCertificate } from 'node:tls';

/**
 * HTTPS GETs to image servers. With a `certificate` (PEM) the server must present exactly that
 * certificate (pinning: it is the only trust anchor, and its SHA-256 must match the peer's); without
 * one the system CA roots and the host name check apply. Keep-alive agents are kept per server and
 * pinned certificate, owned by the instance (one per protocol client).
 */
export interface RemoteHttps {
  /** GET `url`; resolves with the response once its status is 200 (the caller reads the body). */
  get(url: URL, certificate: string | undefined, signal: AbortSignal): Promise<IncomingMessage>;
  /** GET `url`; resolves with the response whatever its status (the svc client reads error envelopes). */
  request(url: URL, certificate: string | undefined, signal: AbortSignal): Promise<IncomingMessage>;
  /** Drop the idle connections. */
  close(): void;
}

export interface RemoteHttpsOptions {
  /** No bytes for this long on a connection: it fails (default 30 s). */
  idleTimeoutMs?: number;
  userAgent?: string;
  /** Sent as the TLS client certificate (svc: this server's certificate, as LXD connects to other servers). */
  clientCert?: { cert: string; key: string } | undefined;
}

export function createRemoteHttps(opts: RemoteHttpsOptions = {}): RemoteHttps {
  const agents = new Map<string, https.Agent>();
  const idleTimeoutMs = opts.idleTimeoutMs ?? 30_000;
  const agentFor = (url: URL, certificate: string | undefined): https.Agent => {
    const key = `${url.origin}\n${certificate ?? ''}`;
    let agent = agents.get(key);
    if (!agent) {
      agent = new https.Agent({
        keepAlive: true,
        maxSockets: 8,
        ...(opts.clientCert ? { cert: opts.clientCert.cert, key: opts.clientCert.key } : {}),
        ...(certificate ? pinnedTls(certificate) : {}),
      });
      agents.set(key, agent);
    }
    return agent;
  };
  const request = (url: URL, certificate: string | undefined, signal: AbortSignal): Promise<IncomingMessage> => {
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      return Promise.reject(new Error(`Unsupported URL scheme in ${url.href}: only https (or http) image servers`));
    if (certificate && url.protocol !== 'https:')
      return Promise.reject(new Error(`A certificate was given for ${url.origin}, which is not https`));
    return new Promise((resolve, reject) => {
      const headers = { 'user-agent': opts.userAgent ?? 'svcd', accept: '*/*' };
      const req =
        url.protocol === 'https:'
          ? https.request(url, { method: 'GET', agent: agentFor(url, certificate), headers, signal })
          : http.request(url, { method: 'GET', headers, signal });
      req.setTimeout(idleTimeoutMs, () =>
        req.destroy(Object.assign(new Error(`no data for ${idleTimeoutMs / 1000} s`), { code: 'ETIMEDOUT' })),
      );
      req.on('error', (e) => reject(describeFailure(e, url, certificate !== undefined)));
      req.on('response', resolve);
      req.end();
    });
  };
  return {
    async get(url, certificate, signal) {
      const res = await request(url, certificate, signal);
      if (res.statusCode === 200) return res;
      res.resume();
      throw new Error(`Failed to fetch ${url.href}: ${res.statusCode} ${res.statusMessage ?? ''}`.trimEnd());
    },
    request: (url, certificate, signal) => request(url, certificate, signal),
    close() {
      for (const a of agents.values()) a.destroy();
      agents.clear();
    },
  };
}

/** TLS options that accept only the server presenting `pem` (no host name check: the pin is the identity). */
export function pinnedTls(pem: string): https.AgentOptions {
  let expected: string;
  try {
    expected = new X509Certificate(pem).fingerprint256;
  } catch (e) {
    throw new Error(
      `The certificate given for the image server is not a valid PEM certificate: ${(e as Error).message}`,
    );
  }
  return {
    ca: pem,
    checkServerIdentity: (_host: string, peer: PeerCertificate) =>
      peer.fingerprint256 === expected
        ? undefined
        : Object.assign(new Error('certificate mismatch'), { code: 'CERT_PIN_MISMATCH' }),
  };
}

const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_UNTRUSTED',
  'CERT_PIN_MISMATCH',
]);

/** A clear message for a failed request: which server, and whether it was the certificate or the connection. */
export function describeFailure(e: unknown, url: URL, pinned: boolean): Error {
  const err = e as NodeJS.ErrnoException;
  if (err.name === 'AbortError') return err;
  const code = err.code ?? '';
  if (TLS_CODES.has(code)) {
    return new Error(
      pinned
        ? `The certificate of ${url.origin} does not match the pinned certificate (${code})`
        : `The certificate of ${url.origin} is not trusted by the system CA roots (${code}: ${err.message}); pass the server's certificate to pin it`,
    );
  }
  return new Error(
    `Failed to fetch ${url.href}: ${err.message}${code && !err.message.includes(code) ? ` (${code})` : ''}`,
  );
}

/** The response body as JSON, refusing bodies over `limit` bytes. */
export async function readJsonBody(res: IncomingMessage, url: URL, limit = 64 * 1024 * 1024): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      size += (chunk as Buffer).byteLength;
      if (size > limit) {
        res.destroy();
        throw new Error(`${url.href} is larger than ${limit} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (e) {
    throw (e as Error).message.includes(url.href) ? e : describeFailure(e, url, false);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (e) {
    throw new Error(`${url.href} is not valid JSON: ${(e as Error).message}`);
  }
}

/** `path` (relative, from a stream) under `server`; refuses anything that leaves the server's origin. */
export function joinServerUrl(server: string, path: string): URL {
  const base = new URL(server.endsWith('/') ? server : `${server}/`);
  const url = new URL(path.replace(/^\/+/, ''), base);
  if (url.origin !== base.origin) throw new Error(`The path "${path}" on ${server} points to another server`);
  return url;
}
