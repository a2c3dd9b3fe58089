/** Domain errors: they know nothing of HTTP; src/api/errors.ts maps them to statuses. */
export class DomainError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
/** The request is malformed or asks for something invalid (→ 400). */
export class ValidationError extends DomainError {}
/** The named thing does not exist (→ 404). */
export class NotFoundError extends DomainError {}
/** The name is taken or the object is in a conflicting state (→ 409). */
export class ConflictError extends DomainError {}
/** The caller may not do this (→ 403). */
export class ForbiddenError extends DomainError {}
/** The host could not be brought to the requested state; the message says why (→ 500, message shown). */
export class HostFailureError extends DomainError {}
/** What the request needs is not reachable now (a cluster member offline); the message names it (→ 503). */
export class UnavailableError extends DomainError {}
/** If-Match did not match the current ETag (→ 412). */
export class PreconditionFailedError extends DomainError {}
/**
 * A conditional write found the object changed since the read it was based on (another writer got
 * there first). The API reads again and retries (src/api/etag.ts); only if that keeps failing does
 * it surface, as a conflict (→ 409).
 */
export class StaleWriteError extends ConflictError {
  constructor(what: string) {
    super(`${what} was changed concurrently by another request; try again`);
  }
}

/** Whether `e` or an error it wraps (drizzle wraps the driver's in `cause`) carries PostgreSQL error `code`. */
function hasPgCode(e: unknown, code: string | ((c: string) => boolean)): boolean {
  const match = typeof code === 'string' ? (c: string) => c === code : code;
  for (let cur: unknown = e, depth = 0; cur && depth < 5; depth++) {
    const c = typeof cur === 'object' ? (cur as { code?: unknown }).code : undefined;
    if (typeof c === 'string' && match(c)) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * The client's connection codes (postgres.js), the socket's, and the server's own for "not now" (class 08,
 * connection exceptions; 57P01-57P03, shut down or starting): the database cannot be reached, which says
 * nothing about the request. The cluster's database tunnel raises CLUSTER_DATABASE_UNREACHABLE.
 */
const UNREACHABLE = new Set([
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOENT',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'CLUSTER_DATABASE_UNREACHABLE',
  '57P01',
  '57P02',
  '57P03',
]);

/** The database (DATABASE_URL's server, or a cluster's) cannot be reached just now: a 503, not a 500. */
export const isDatabaseUnreachable = (e: unknown): boolean =>
  hasPgCode(e, (c) => UNREACHABLE.has(c) || /^08...$/.test(c));

/** PostgreSQL unique violation (23505), whichever driver raised it. */
export const isUniqueViolation = (e: unknown): boolean => hasPgCode(e, '23505');

/** PostgreSQL foreign key violation (23503): a row still referenced, or a reference to a row that is gone. */
export const isForeignKeyViolation = (e: unknown): boolean => hasPgCode(e, '23503');

/**
 * `fn`, run once more when it lost a race to insert the same row (a unique violation): the second run finds
 * the row the other writer committed. Any other error, or a second violation, is thrown.
 */
export async function retryOnceIfRaced<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    return fn();
  }
}
