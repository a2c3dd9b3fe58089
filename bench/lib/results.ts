/** The figures one api-bench run produces (also written as JSON with --json, read by compare-report.ts). */
import type { LatencyStats } from './stats.ts';

export interface GetCell {
  /** `GET /1.0` or `GET /1.0/containers?recursion=1`. */
  what: 'server' | 'list';
  path: string;
  /** Bench containers that existed during the cell. */
  containers: number;
  /** Items in the last list reply (all containers the server returned). */
  listed?: number;
  concurrency: number;
  requests: number;
  errors: number;
  firstError?: string;
  seconds: number;
  rps: number;
  latency: LatencyStats;
  /** Bytes of the last successful reply body. */
  bodyBytes: number;
}

export interface StepStats {
  ok: number;
  failed: number;
  errors: string[];
  latency?: LatencyStats;
}

export interface SingleResults {
  iterations: number;
  create: StepStats;
  start: StepStats;
  /** create + start of the same container (sum of the two operation latencies). */
  createStart: StepStats;
  /** exec `true` with wait-for-websocket false. */
  exec: StepStats & { supported: boolean; note?: string };
  /** exec `true` with wait-for-websocket true, every socket connected (absent in older result files). */
  execWebsocket?: StepStats & { supported: boolean; note?: string };
  stopForce: StepStats;
  delete: StepStats;
}

/** exec `true` repeated on one running, settled container (the first single round's), both ways alternated. */
export interface ExecRunningResults {
  rounds: number;
  exec: StepStats;
  execWebsocket: StepStats;
}

/** File push/pull figures by transfer (`push 1 KiB`, `pull 64 MiB`, ...). */
export type FilesResults = Record<
  string,
  { ok: number; failed: number; medianMs?: number; mbPerS?: number; errors: string[] }
>;

export interface BulkResults {
  n: number;
  /** From issuing all creates at once to the last start finishing. */
  createStartWallMs: number;
  /** From issuing all creates at once to the last create's operation ending (the starts overlap it). */
  createsWallMs?: number;
  /** CPU seconds (user+system) of the daemon's own process over the creates+starts, and over the deletes. */
  createStartCpuS?: number;
  deleteCpuS?: number;
  createFailed: number;
  startFailed: number;
  /** Containers the server listed as Running right after the phase. */
  runningObserved: number;
  createLatency?: LatencyStats;
  startLatency?: LatencyStats;
  /** Force stop + delete of all of them at once. */
  deleteWallMs: number;
  stopFailed: number;
  deleteFailed: number;
  /** Distinct error texts with their counts. */
  errors: Record<string, number>;
  /** The daemon's whole tree (bench/lib/process-tree.ts): sum of VmRSS, and of Pss. */
  rssRunningKiB?: number;
  pssRunningKiB?: number;
  rssAfterDeleteKiB?: number;
  rssAfterDeleteSettledKiB?: number;
  pssAfterDeleteSettledKiB?: number;
  /** The tree's processes with N running: `comm[pid] RSS/PSS`, largest first. */
  treeRunning?: string;
}

export interface BenchResults {
  label: string;
  socket: string;
  server: { name: string; version: string; pid?: number; driver?: string; driverVersion?: string; storage?: string };
  startedAt: string;
  finishedAt?: string;
  image: { ref: string; fingerprint?: string; imported: boolean; importMs?: number; file?: string };
  options: {
    counts: number[];
    concurrency: number[];
    durationS: number;
    iterations: number;
    skipExec: boolean;
    settleS: number;
  };
  /** The daemon's whole tree (bench/lib/process-tree.ts): sum of VmRSS, and of Pss; `idleTree` lists its processes. */
  rss: { startKiB?: number; idleKiB?: number; startPssKiB?: number; idlePssKiB?: number; idleTree?: string };
  get: GetCell[];
  single?: SingleResults;
  /** Absent when exec is not supported or skipped, and in older result files. */
  execRunning?: ExecRunningResults;
  files?: FilesResults;
  bulk: BulkResults[];
  /** /proc/loadavg (1, 5, 15 min) when each phase began: other work on the machine skews the figures. */
  load: { phase: string; loadavg: [number, number, number] }[];
  /** Requests resent because the server closed a kept-alive connection as it was reused. */
  clientRetries?: number;
  /** Containers this run could not delete at the end (should be empty). */
  leftovers: string[];
  aborted?: string;
}
