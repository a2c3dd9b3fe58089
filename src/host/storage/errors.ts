/**
 * The host cannot do what was asked (missing kernel feature, tool, or filesystem option). Retrying does not
 * help until the host changes; the message says exactly why, in words a user can act on.
 */
export class StorageUnsupportedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StorageUnsupportedError';
  }
}

/** True for a {@link StorageUnsupportedError}, also one from another copy of this module (matched by name). */
export function isStorageUnsupportedError(e: unknown): e is StorageUnsupportedError {
  return e instanceof StorageUnsupportedError || (e instanceof Error && e.name === 'StorageUnsupportedError');
}
