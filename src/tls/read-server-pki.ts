import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import tls from 'node:tls';

/** PKI mode: the CA that issues client (and server) certificates, and its revocation list. */
export interface ServerPki {
  /** PEM of `<state>/server.ca`. */
  ca: string;
  /** PEM of `<state>/ca.crl`, when there is one. */
  crl?: string;
  /** Set when server.crt is not issued by the CA (clients in PKI mode then ask for its fingerprint). */
  warning?: string;
}

/** A CRL as PEM: LXD reads ca.crl in PEM or DER, the TLS stack takes PEM only. */
export function pemOfCrl(data: Buffer): string {
  const text = data.toString('latin1');
  if (text.includes('-----BEGIN X509 CRL-----')) return text;
  const b64 = data.toString('base64').replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN X509 CRL-----\n${b64}-----END X509 CRL-----\n`;
}

async function readOptional(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/**
 * As LXD: `<state>/server.ca` present means PKI mode, `<state>/ca.crl` revokes certificates it issued.
 * Both are read once at start (LXD reads them at start too: a change wants a restart). A file that
 * cannot be parsed stops the start, naming the file, rather than silently leaving PKI mode.
 */
export async function readServerPki(stateDir: string, serverCertPem: string): Promise<ServerPki | undefined> {
  const caFile = path.join(stateDir, 'server.ca');
  const crlFile = path.join(stateDir, 'ca.crl');
  const caData = await readOptional(caFile);
  if (!caData) return undefined;
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(caData);
  } catch (e) {
    throw new Error(`${caFile}: not a PEM certificate (${(e as Error).message})`);
  }
  // LXD takes the file's first certificate as the CA: so does svcd.
  const caPem = ca.toString();
  const crlData = await readOptional(crlFile);
  const crl = crlData ? pemOfCrl(crlData) : undefined;
  try {
    tls.createSecureContext({ ca: caPem, ...(crl ? { crl } : {}) });
  } catch (e) {
    throw new Error(`${crl ? crlFile : caFile}: cannot be used (${(e as Error).message})`);
  }
  const server = new X509Certificate(serverCertPem);
  const issued = server.checkIssued(ca) && server.verify(ca.publicKey);
  return {
    ca: caPem,
    ...(crl ? { crl } : {}),
    ...(issued ? {} : { warning: `server.crt is not issued by server.ca (${ca.subject.replace(/\n/g, ', ')})` }),
  };
}
