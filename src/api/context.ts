import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

export type AuthLevel = 'guest' | 'untrusted' | 'trusted';

export interface Caller {
  level: AuthLevel;
  protocol: 'unix' | 'tls';
  /** SHA-256 of the client certificate (TLS). */
  fingerprint?: string | undefined;
  /** PEM of the client certificate (TLS). */
  certificatePem?: string | undefined;
  address?: string | undefined;
  /** PKI mode: why the TLS stack refused the client certificate (CERT_REVOKED, ...). */
  pkiRefusal?: string | undefined;
  /** Trusted through this dashboard session (src/ui/ui-caller.ts), not a certificate. */
  uiSession?: string | undefined;
}

export interface AppEnv {
  Bindings: { incoming?: IncomingMessage; outgoing?: ServerResponse; listener?: 'unix' | 'https' };
  Variables: { caller: Caller; requestId: string; log: Logger; project: string };
}
