import {
  ConflictError,
  type DomainError,
  ForbiddenError,
  HostFailureError,
  isDatabaseUnreachable,
  isForeignKeyViolation,
  isUniqueViolation,
  NotFoundError,
  PreconditionFailedError,
  UnavailableError,
  ValidationError,
} from '../desired/errors.ts';
import {
  HostConflictError,
  type HostError,
  HostInputError,
  HostNotFoundError,
  HostUnavailableError,
} from '../host/errors.ts';

/** HTTP-level errors raised by the API layer itself (auth, method, body size...). */
export class HttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 412 | 500,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The one table from domain and host errors to statuses. */
const TABLE: [new (...a: never[]) => DomainError | HostError, 400 | 403 | 404 | 409 | 412 | 500 | 503][] = [
  [ValidationError, 400],
  [NotFoundError, 404],
  [ConflictError, 409],
  [ForbiddenError, 403],
  [PreconditionFailedError, 412],
  [HostFailureError, 500],
  [UnavailableError, 503],
  [HostInputError, 400],
  [HostNotFoundError, 404],
  [HostConflictError, 409],
  [HostUnavailableError, 500],
];

/** Whether `e` says the request's input is invalid (a 400), from the domain's checks or the host's. */
export function isInvalidInput(e: unknown): e is Error {
  return e instanceof ValidationError || e instanceof HostInputError;
}

export function statusFor(e: unknown): {
  status: 400 | 401 | 403 | 404 | 409 | 412 | 500 | 503;
  message: string;
  known: boolean;
} {
  if (e instanceof HttpError) return { status: e.status, message: e.message, known: true };
  for (const [cls, status] of TABLE) if (e instanceof cls) return { status, message: e.message, known: true };
  if (isDatabaseUnreachable(e))
    return {
      status: 503,
      message: 'The database cannot be reached just now; try again',
      known: true,
    };
  if (isUniqueViolation(e)) return { status: 409, message: 'An object with this name already exists', known: true };
  // A safety net: refusals are checked where they happen, with a precise message; a foreign key that
  // still catches one (a concurrent change) is a conflict, not an internal error.
  if (isForeignKeyViolation(e))
    return { status: 409, message: 'The object is in use, or refers to one that no longer exists', known: true };
  return { status: 500, message: 'Internal server error', known: false };
}
