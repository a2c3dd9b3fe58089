/**
 * A reconcile error that retrying cannot fix (bad configuration, missing host
 * support, ...). The manager reports it to the settler as terminal and does
 * not retry until something triggers the key again.
 */
export class TerminalError extends Error {
  override name = 'TerminalError';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * True for a {@link TerminalError}, also one created by another copy of this
 * module (matched by name), so classification survives duplicated bundles.
 */
export function isTerminalError(e: unknown): boolean {
  if (e instanceof TerminalError) return true;
  return e instanceof Error && e.name === 'TerminalError';
}
