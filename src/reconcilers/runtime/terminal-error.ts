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
 * module (matched by name), so classification survives duplicated bundles; and
 * for any error that says it is terminal (`terminal: true`, as a host command
 * failure its tool's classifier judged unfixable by a retry does).
 */
export function isTerminalError(e: unknown): boolean {
  if (e instanceof TerminalError) return true;
  if (!(e instanceof Error)) return false;
  return e.name === 'TerminalError' || (e as { terminal?: unknown }).terminal === true;
}

/** What a terminal failure's operation says: the error's `terminalMessage` (a tool's own words) if it has one. */
export function terminalMessageOf(e: unknown): string {
  const own = e instanceof Error ? (e as { terminalMessage?: unknown }).terminalMessage : undefined;
  if (typeof own === 'string' && own !== '') return own;
  return e instanceof Error ? e.message : String(e);
}
