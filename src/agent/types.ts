import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { AppEnv } from '../api/context.ts';
import type { DaemonConfig } from '../config/daemon-config.ts';
import type { Database } from '../db/types.ts';
import type { EventBus } from '../events/index.ts';
import type { Operations } from '../operations/index.ts';
import type { Clock, ReconcileManager, Reconciler } from '../reconcilers/runtime/index.ts';

export interface Agent {
  config: DaemonConfig;
  app: Hono<AppEnv>;
  database: Database;
  bus: EventBus;
  ops: Operations;
  log: Logger;
  reconcile: ReconcileManager;
  socketPath: string;
  /** Clean daemon stop: containers keep running. */
  stop(): Promise<void>;
  /** Host shutdown: stop containers by boot.stop.priority, then stop the daemon. */
  shutdownHost(): Promise<void>;
}

export interface AgentOptions {
  clock?: Clock;
  logDestination?: NodeJS.WritableStream;
  /** Reconcilers for each kind of desired state (storage, containers... arrive with their issues). */
  reconcilers?: Reconciler[];
  /** Events websocket ping interval (tests shorten it). */
  pingMs?: number;
  /** Backup expiry check period. */
  backupExpiryMs?: number;
  /** Container observer period (tests shorten it). */
  containerObserveMs?: number;
  /** How often running containers' cgroup limits and live mounts are compared with what svcd applied (default 5 s). */
  liveObserveMs?: number;
  /** Network health check period (default 1 s). */
  networkObserveMs?: number;
  /** Pool observer period (tests shorten it). */
  poolObserveMs?: number;
  /** Operation deadlines and sweep period (tests shorten them). */
  operations?: { defaultDeadlineMs?: number; sweepIntervalMs?: number; writeBehindMs?: number };
  /** Called for every API request (the process's idle GC watches it). */
  onRequest?: () => void;
}

/** Restart the agent in place (see createAgent): resolves, with the new one's operations, once it serves. */
export type AgentRestart = (
  reason: string,
  steps?: {
    prepare?: () => Promise<void>;
    undo?: () => Promise<void>;
    /** Stop this daemon's private database server too (it no longer serves: the cluster's database is elsewhere). */
    stopDatabaseServer?: boolean;
  },
) => Promise<{ ops: Operations }>;
