/** Samples host state on an interval (e.g. procfs and cgroup reads). */
export interface PollObserver {
  name: string;
  kind: 'poll';
  intervalMs: number;
  sample: (signal: AbortSignal) => Promise<void>;
}

/** A long-running watcher (e.g. an `lxc-monitor` process); restarted with backoff when it ends. */
export interface StreamObserver {
  name: string;
  kind: 'stream';
  run: (signal: AbortSignal) => Promise<void>;
}

export type Observer = PollObserver | StreamObserver;

/** What the runner needs from each observer loop. */
export interface ObserverLoop {
  start(): void;
  stop(): Promise<void>;
  runNow(): Promise<void>;
}
