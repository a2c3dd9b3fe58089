/**
 * The host's own errors. Host code knows nothing of HTTP or of the domain's errors: it says what the
 * host refused, and src/api/errors.ts maps each class to a status in the one error table.
 */
export class HostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
/** What was asked of the host cannot be done as given: a bad path, a wrong type, an unusable upload (→ 400). */
export class HostInputError extends HostError {}
/** The thing named is not on the host (→ 404). */
export class HostNotFoundError extends HostError {}
/** The host already has it, or holds it in a conflicting state (→ 409). */
export class HostConflictError extends HostError {}
/** The host could not do it; the message says why (→ 500, message shown). */
export class HostUnavailableError extends HostError {}
