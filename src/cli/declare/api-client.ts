import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { PeerCertificate } from 'node:tls';

/** Where the declarative verbs reach the server: a unix socket, or HTTPS with a client certificate. */
export type ApiTarget =
  | { socketPath: string }
  | { url: string; clientCert: string; clientKey: string; serverCert?: string };

/** The parts of LXD's response envelope the client reads. */
export interface Envelope {
  type?: string;
  error?: string;
  operation?: string;
  metadata?: unknown;
}

export interface ApiReply {
  status: number;
  json: Envelope | undefined;
  etag?: string;
}

interface OperationView {
  status?: string;
  err?: string;
}

/** A refused request: the server's own message, and what was asked. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A small REST client: one keep-alive agent, JSON in and out, operations waited for. */
export interface ApiClient {
  request(method: string, path: string, body?: unknown): Promise<ApiReply>;
  /** GET that must answer 200: its metadata. */
  get(path: string): Promise<unknown>;
  /** A write that must succeed; an async answer's operation is waited for (its failure throws). */
  write(method: string, path: string, body?: unknown): Promise<unknown>;
  close(): void;
}

/** TLS options accepting only the server presenting `pem`: the pin is the identity, so no host name check. */
function pinned(pem: string): https.AgentOptions {
  const expected = new X509Certificate(pem).fingerprint256;
  return {
    ca: pem,
    checkServerIdentity: (_host: string, peer: PeerCertificate) =>
      peer.fingerprint256 === expected ? undefined : new Error('the server certificate does not match --server-cert'),
  };
}

export function createApiClient(target: ApiTarget, opts: { timeoutMs?: number } = {}): ApiClient {
  const timeoutMs = opts.timeoutMs ?? 600_000;
  let base: URL | undefined;
  let agent: http.Agent;
  if ('socketPath' in target) agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  else {
    base = new URL(target.url);
    if (base.protocol !== 'https:') throw new Error(`--url must be an https:// address, got ${target.url}`);
    agent = new https.Agent({
      keepAlive: true,
      maxSockets: 32,
      cert: target.clientCert,
      key: target.clientKey,
      ...(target.serverCert ? pinned(target.serverCert) : {}),
    });
  }
  const request = (method: string, path: string, body?: unknown): Promise<ApiReply> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string> = { Host: base?.host ?? 'svcd' };
      if (payload !== undefined) {
        headers['Content-Type'] = 'application/json';
        headers['Content-Length'] = String(Buffer.byteLength(payload));
      }
      const common = { method, path, headers, agent, timeout: timeoutMs };
      const req =
        'socketPath' in target
          ? http.request({ ...common, socketPath: target.socketPath })
          : https.request({ ...common, host: base!.hostname, port: base!.port || 8443 });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Envelope | undefined;
          try {
            json = text ? (JSON.parse(text) as Envelope) : undefined;
          } catch {
            json = undefined;
          }
          const etag = res.headers.etag;
          resolve({ status: res.statusCode ?? 0, json, ...(etag ? { etag } : {}) });
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer to ${method} ${path} within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  const refused = (method: string, path: string, r: ApiReply) =>
    new ApiError(r.status, `${method} ${path}: ${r.json?.error || `HTTP ${r.status}`}`);
  const client: ApiClient = {
    request,
    async get(path) {
      const r = await request('GET', path);
      if (r.status !== 200) throw refused('GET', path, r);
      return r.json?.metadata;
    },
    async write(method, path, body) {
      const r = await request(method, path, body);
      if (r.status >= 400 || r.json?.type === 'error') throw refused(method, path, r);
      if (r.json?.type !== 'async') return r.json?.metadata;
      const op = String(r.json.operation);
      for (;;) {
        const w = await request('GET', `${op}/wait?timeout=60`);
        if (w.status !== 200) throw refused('GET', `${op}/wait`, w);
        const m = (w.json?.metadata ?? {}) as OperationView;
        if (m.status === 'Success') return m;
        if (m.status === 'Failure' || m.status === 'Cancelled')
          throw new ApiError(400, `${method} ${path}: ${m.err || m.status}`);
      }
    },
    close: () => agent.destroy(),
  };
  return client;
}
