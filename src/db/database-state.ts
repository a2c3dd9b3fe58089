import type { LatestStampWriter } from '../util/latest-stamp-writer.ts';
import { createVersionedCache, type VersionedCache } from '../util/versioned-cache.ts';
import type { VersionListener } from './data-version-listener.ts';
import { localVersion, type WriteCounter } from './local-writes.ts';

/** Entries the read cache keeps per database at most; the longest unrefreshed goes first. */
export const MAX_CACHED_READS = 4096;

/**
 * Rows as this process last wrote or read them, JSON per key, when it is the database's only writer
 * (desired/reconcile-facts.ts keeps the facts of reconcile_status rows in it).
 */
export interface RowMemory {
  readonly values: Map<string, string>;
  /** Every row is in `values` (preloaded): a key not there has no row. */
  complete: boolean;
  /** While a preload reads: keys written or forgotten meanwhile, which it must not overwrite. */
  touchedDuringLoad: Set<string> | undefined;
  /** Keys being written, or whose write failed: read from the database, not assumed absent. */
  readonly unsure: Set<string>;
}

/**
 * What one open database remembers, owned by it (openDatabase creates it; it lives and dies with the
 * handle, never shared between databases or agents). A transaction has none.
 */
export interface DatabaseState {
  /** This process's count of its writes when it is the only writer (PGlite); undefined when others may write. */
  readonly localWrites: WriteCounter | undefined;
  /** Reads of rarely written tables, kept per data version (desired/cached-reads.ts). */
  readonly reads: VersionedCache<unknown>;
  /** Only with localWrites: what this process knows of rows only it writes. */
  readonly facts: RowMemory | undefined;
  /** On PostgreSQL: versions from notified commits plus this process's own writes (data-version-listener.ts). */
  readonly notified: NotifiedVersions | undefined;
  /** Database.relaxed, when it is another handle (openDatabase sets it): see relaxedOf. */
  relaxed?: object;
  /** Images' last_used_at stamps, merged per image (desired/images.ts makes it at the first touch). */
  lastUsedStamps?: LatestStampWriter;
}

export interface NotifiedVersions {
  listener: Pick<VersionListener, 'counter' | 'live'>;
  /** This process's own finished writes (postgres-client-hooks.ts). */
  own: WriteCounter;
}

/** The version of `tables` from notifications and own writes, or undefined while they cannot be trusted. */
export function notifiedVersion(n: NotifiedVersions | undefined, tables: readonly string[]): string | undefined {
  if (!n?.listener.live()) return undefined;
  return `n${localVersion(n.own, tables)}/${localVersion(n.listener.counter, tables)}`;
}

export function createDatabaseState(localWrites: WriteCounter | undefined, notified?: NotifiedVersions): DatabaseState {
  return {
    localWrites,
    notified,
    reads: createVersionedCache(MAX_CACHED_READS),
    facts: localWrites
      ? { values: new Map(), complete: false, touchedDuringLoad: undefined, unsure: new Set() }
      : undefined,
  };
}

const STATE = Symbol('svcd database state');
type WithState = { [STATE]?: DatabaseState };

/** Give a database handle its state (openDatabase does, once). */
export function attachDatabaseState(db: object, state: DatabaseState): void {
  Object.defineProperty(db, STATE, { value: state, enumerable: false });
}

/** The state of a database handle; undefined for a transaction (which must read what it wrote). */
export const databaseStateOf = (db: object): DatabaseState | undefined => (db as WithState)[STATE];

/**
 * The handle of `db`'s database for what is not desired state (Database.relaxed: commits that do not wait
 * for their WAL flush), for code that has only `db`; `db` itself where they are one (or for a transaction).
 */
export const relaxedOf = <T extends object>(db: T): T => (databaseStateOf(db)?.relaxed as T | undefined) ?? db;

/** The write counter of a database whose every writer is this process, if `db` is one. */
export const localWrites = (db: object): WriteCounter | undefined => databaseStateOf(db)?.localWrites;
