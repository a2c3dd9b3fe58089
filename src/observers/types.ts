/** Samples host state on an interval (e.g. procfs and cgroup reads). */
export interface PollObserver {
  name: string;
  kind: 'poll';
  intervalMs: number;
  sample: (signal: AbortSignal) => Promise<void>;
  /**
   * Its first look waits for the startup reconcile (the runner's `startupDone`): before, it would only find what
   * that reconcile is setting up (a bridge or a mount not there yet, after a reboot) and queue it again.
   */
  afterStartup?: boolean;
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
  /** Resolves once its first look is done (a poll's first sample, whatever its outcome; a stream's at once). */
  start(): Promise<void>;
  stop(): Promise<void>;
  runNow(): Promise<void>;
}
