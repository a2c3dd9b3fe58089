import type { Db } from '../db/types.ts';
import { listCertificates } from '../desired/certificates.ts';

/**
 * In-memory set of trusted fingerprints, so authenticating a TLS request costs no query.
 * Reloaded after local certificate writes and every `refreshMs` (writes by other cluster members).
 */
export function createTrustStore(opts: { db: Db; refreshMs?: number; now?: () => number; pki?: boolean }) {
  const refreshMs = opts.refreshMs ?? 5_000;
  const now = opts.now ?? Date.now;
  let trusted = new Set<string>();
  let loadedAt = -Infinity;
  let loading: Promise<void> | undefined;
  const reload = () =>
    (loading ??= listCertificates(opts.db)
      .then((rows) => {
        trusted = new Set(rows.map((r) => r.fingerprint));
        loadedAt = now();
      })
      .finally(() => {
        loading = undefined;
      }));
  return {
    /** PKI mode (server.ca): a client certificate must also verify against the CA and its CRL. */
    pki: opts.pki ?? false,
    async isTrusted(fingerprint: string): Promise<boolean> {
      if (now() - loadedAt > refreshMs) await reload();
      return trusted.has(fingerprint);
    },
    /** Call after adding or removing a certificate. */
    invalidate: () => reload(),
  };
}
export type TrustStore = ReturnType<typeof createTrustStore>;
