import type { Logger } from 'pino';
import type { Db } from '../db/types.ts';
import type { RsyncFeature } from '../host/migration/rsync-args.ts';
import type { Operations } from '../operations/index.ts';
import type { Convergence } from '../reconcilers/convergence.ts';
import type { PoolAccess, StagingStore } from './staging.ts';

/** What the migration roles need from the agent. */
export interface MigrationDeps {
  db: Db;
  /** This member: what it receives is held by it. */
  node: string;
  ops: Operations;
  log: Logger;
  reconcile: { enqueue(kind: string, key: string, reason: string): void };
  convergence: Pick<Convergence, 'wait'>;
  pools: PoolAccess;
  staging: StagingStore;
  /**
   * The rsync features this side runs with. No compress by default: on the links migrations
   * cross here (loopback, a LAN) compressing costs more CPU time than it saves in bytes.
   */
  rsyncFeatures: readonly RsyncFeature[];
}
