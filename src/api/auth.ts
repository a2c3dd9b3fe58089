import type { IncomingMessage } from 'node:http';
import type { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { fingerprintOfDer } from '../desired/certificates.ts';
import type { Caller } from './context.ts';
import type { TrustStore } from './trust-store.ts';

/**
 * Who is calling: the unix socket is local and trusted; over TLS a registered client certificate is
 * trusted, an unknown one untrusted, none at all guest. In PKI mode the TLS stack has verified the
 * certificate against server.ca and ca.crl: one it refused (not issued by the CA, revoked, expired)
 * is untrusted even when its fingerprint is in the trust store.
 */
export async function identifyCaller(
  incoming: IncomingMessage | undefined,
  listener: 'unix' | 'https' | undefined,
  trust: TrustStore,
): Promise<Caller> {
  if (listener !== 'https' || !incoming) return { level: 'trusted', protocol: 'unix' };
  const socket = incoming.socket as TLSSocket;
  const address = socket.remoteAddress;
  const peer = typeof socket.getPeerX509Certificate === 'function' ? socket.getPeerX509Certificate() : undefined;
  if (!peer) return { level: 'guest', protocol: 'tls', address };
  const fingerprint = fingerprintOfDer(peer.raw);
  const certificatePem = (peer as X509Certificate).toString();
  if (trust.pki && !socket.authorized) {
    const pkiRefusal = String(socket.authorizationError ?? 'not verified by the server CA');
    return { level: 'untrusted', protocol: 'tls', fingerprint, certificatePem, address, pkiRefusal };
  }
  const level = (await trust.isTrusted(fingerprint)) ? 'trusted' : 'untrusted';
  return { level, protocol: 'tls', fingerprint, certificatePem, address };
}
