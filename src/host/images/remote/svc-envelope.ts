import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { PeerCertificate } from 'node:tls';

/** How this server connects to another one: its own certificate as TLS client certificate, and an optional pinned server certificate. */
export interface RemoteTls {
  /** PEM of this server's certificate and key, sent as the TLS client certificate (as LXD does). */
  clientCert?: { cert: string; key: string } | undefined;
  /** PEM of the remote's certificate: only that leaf is accepted. Without it, the system CA roots apply. */
  pinned?: string | undefined;
}

const USER_AGENT = 'svcd';

/** The DER of the first certificate of a PEM (a clear error when it is not one). */
export function pinnedDer(pem: string): Buffer {
  try {
    return new X509Certificate(pem).raw;
  } catch (e) {
    throw new Error(`Invalid "certificate": not a PEM certificate (${(e as Error).message})`);
  }
}

/** TLS options for one request: pinning trusts the given leaf alone (compared byte for byte), hostnames aside. */
export function tlsOptions(tls: RemoteTls): https.RequestOptions {
  const client = tls.clientCert ? { cert: tls.clientCert.cert, key: tls.clientCert.key } : {};
  if (!tls.pinned) return client;
  const der = pinnedDer(tls.pinned);
  return {
    ...client,
    ca: [tls.pinned],
    checkServerIdentity: (_host: string, cert: PeerCertificate) =>
      cert.raw.equals(der) ? undefined : Object.assign(new Error('the server certificate does not match the pinned certificate'), { code: 'ERR_CERT_PINNING' }),
  };
}

/** A failed connection or TLS handshake, explained (a wrong pinned certificate says so). */
export function describeConnectError(server: string, e: unknown, pinned: boolean): Error {
  const err = e as NodeJS.ErrnoException;
  const tlsFailure = /CERT|SELF_SIGNED|UNABLE_TO|PINNING/.test(err.code ?? '');
  if (tlsFailure && pinned) return new Error(`Cannot connect to ${server}: its certificate is not the pinned certificate (${err.message})`);
  if (tlsFailure) return new Error(`Cannot connect to ${server}: its certificate is not trusted (${err.message}); give the server's certificate to pin it`);
  return new Error(`Cannot connect to ${server}: ${err.message}`);
}

/**
 * GET a URL of a remote server; resolves with the response (status not checked) once the headers
 * arrived. The body is the caller's to read (or `resume()`); `signal` aborts the request.
 */
export function remoteGet(url: URL, tls: RemoteTls, signal: AbortSignal, headers: Record<string, string> = {}): Promise<http.IncomingMessage> {
  const server = url.origin;
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(url, { method: 'GET', agent: false, signal, headers: { 'User-Agent': USER_AGENT, ...headers }, ...(url.protocol === 'https:' ? tlsOptions(tls) : {}) }, resolve);
    req.on('error', (e) => reject(signal.aborted ? e : describeConnectError(server, e, !!tls.pinned)));
    req.setTimeout(60_000, () => req.destroy(new Error(`no answer within 60 s`)));
    req.end();
  });
}

/** Read a JSON body (bounded) and return the LXD envelope's metadata; an error envelope or status becomes an Error naming the URL. */
export async function readEnvelope(res: http.IncomingMessage, what: string, limit = 8 * 1024 * 1024): Promise<any> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new Error(`${what}: answer too large`);
    chunks.push(chunk);
  }
  let body: any;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new Error(`${what}: ${res.statusCode} and not a JSON answer`);
  }
  if (res.statusCode !== 200 || body?.type === 'error') throw Object.assign(new Error(`${what}: ${body?.error || `${res.statusCode} ${res.statusMessage ?? ''}`.trim()}`), { status: res.statusCode });
  return body?.metadata;
}
