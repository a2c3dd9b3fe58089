export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

/**
 * Capped exponential backoff without jitter: failures=1 → base, 2 → 2*base,
 * 3 → 4*base, ... never above max. failures <= 0 → 0 (no wait).
 */
export function computeBackoff(failures: number, opts: BackoffOptions): number {
  const { baseMs, maxMs } = opts;
  if (!(failures >= 1) || !(baseMs > 0) || !(maxMs > 0)) return 0;
  // Cap the exponent so the multiplication can never overflow to Infinity.
  const exponent = Math.min(Math.floor(failures) - 1, 60);
  return Math.min(maxMs, baseMs * 2 ** exponent);
}
