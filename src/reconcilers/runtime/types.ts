import type { Tx } from '../../db/types.ts';

/** What a reconciler gets for one run. */
export interface ReconcileContext {
  kind: string;
  key: string;
  /** Consecutive transient failures before this run; 0 for the first try after a success. */
  attempt: number;
  /** Aborted when the run times out or the manager stops. */
  signal: AbortSignal;
  /** Why the key was queued: 'startup', 'resync', 'retry', 'requeue', 'drift: ...', or a caller's reason. */
  reason: string;
}

export interface ReconcileResult {
  /** Desired generation now converged; undefined if the object is gone / nothing to settle. */
  observedGeneration?: number;
  /** Ask to be called again later even on success (e.g. polling a slow host change). */
  requeueAfterMs?: number;
  /** The key's facts to record with its convergence, in the same write (only with observedGeneration). */
  facts?: Record<string, unknown>;
  /** The object was removed (its rows are gone): its operations settle, and its status row goes instead of being recorded. */
  gone?: boolean;
  /**
   * With `gone`: the object's own rows, deleted by the settler in the same transaction as its status row and
   * its operations' settlement (one commit). Until that commit the rows are there, so a crash before it
   * redoes the removal; the object's operations never end before its rows are gone.
   */
  removeRows?: RemoveRows;
  /** Called once the convergence is recorded (after `removeRows` committed): what the reconciler announces of it. */
  afterSettle?: () => void;
}

/** Deletes an object's rows inside the settler's transaction, without awaiting them (leave-in-flight.ts). */
export type RemoveRows = (tx: Tx) => Promise<unknown>;

export interface Reconciler {
  kind: string;
  /**
   * At start, every key of a lower tier is reconciled once before any key of a higher tier is queued, so
   * what the others stand on (pools, networks with their dnsmasq) is on the host before they are
   * converged. Default 1.
   */
  startupTier?: number;
  listKeys(): Promise<string[]>;
  reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult>;
}

export interface Settler {
  /**
   * Settles operations whose target generation <= observedGeneration; records `facts` when given; `gone`: removes
   * the key's status instead, in one transaction with `removeRows` when given.
   */
  converged(
    kind: string,
    key: string,
    observedGeneration: number,
    facts?: Record<string, unknown>,
    gone?: boolean,
    removeRows?: RemoveRows,
  ): Promise<void>;
  /** terminal: fail pending operations; transient: only record the last error. */
  failed(kind: string, key: string, message: string, terminal: boolean): Promise<void>;
}

/** The subset of pino's logger the runtime uses. */
export interface RuntimeLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child?(b: object): RuntimeLogger;
}
