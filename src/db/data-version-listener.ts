/**
 * Data versions on PostgreSQL without a query per request. Every write of a versioned table notifies
 * `svcd_data_versions` at commit with `<table> <writer's application_name>` (migration 0009); a connection
 * of svcd's own LISTENs and counts them per table. Together with this process's own writes (counted as they
 * succeed, postgres-client-hooks.ts: the notification of one's own commit may come back after the next
 * request, so those, named by `origin`, are skipped), that count is the version a cached read is kept under
 * (desired/data-versions.ts), on one host or several.
 *
 * A listening session is told of every commit; only a lost connection loses notifications. So the count is
 * trusted only while the connection is known to be up: every `heartbeatMs` it LISTENs again if it was
 * closed (which bumps every table: what was committed meanwhile is unknown), else runs `select 1`. A beat
 * that fails, or none for `graceMs`, and live() is false: no version is known, and cached reads read
 * again (readDataVersion).
 */
import type { WriteCounter } from './local-writes.ts';

export const DATA_VERSIONS_CHANNEL = 'svcd_data_versions';

export interface VersionListenerDeps {
  /** A query on the listening connection (postgres.js `unsafe` on a client of one connection). */
  query(text: string): PromiseLike<unknown>;
  /** The application_name of this process's own connections: their notifications are skipped. */
  origin: string;
  now?: () => number;
  heartbeatMs?: number;
  /** How long after the last good beat the count is still trusted (default 3 beats). */
  graceMs?: number;
}

export interface VersionListener {
  /** Other processes' notified writes per table (`any`: every table, after a (re)LISTEN). */
  readonly counter: WriteCounter;
  /** Whether the counter is known to hear every commit. */
  live(): boolean;
  /** Wire to the client's onnotify. */
  onNotify(channel: string, payload: string): void;
  /** Wire to the client's onclose: LISTEN is gone with the connection. */
  onClose(): void;
  /** LISTEN once, then beat in the background. */
  start(): Promise<void>;
  /** No more beats (the connection's end closes it). */
  stop(): void;
}

export function createVersionListener(deps: VersionListenerDeps): VersionListener {
  const now = deps.now ?? (() => performance.now());
  const heartbeatMs = deps.heartbeatMs ?? 1_000;
  const graceMs = deps.graceMs ?? 3 * heartbeatMs;
  const counter: WriteCounter = { tables: new Map(), any: 0, reach: undefined };
  let subscribed = false;
  let lastOk = -Infinity;
  let beating: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const bumpTable = (t: string) => counter.tables.set(t, (counter.tables.get(t) ?? 0) + 1);
  const bounded = <T>(p: PromiseLike<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('data version listener: no answer')), graceMs);
      Promise.resolve(p).then(
        (v) => (clearTimeout(t), resolve(v)),
        (e: unknown) => (clearTimeout(t), reject(e)),
      );
    });

  async function beatOnce(): Promise<void> {
    try {
      if (!subscribed) {
        await bounded(deps.query(`listen ${DATA_VERSIONS_CHANNEL}`));
        subscribed = true;
        // What was committed while nobody listened is unknown: every cached read goes.
        counter.any++;
      } else await bounded(deps.query('select 1'));
      lastOk = now();
    } catch {
      // Unknown state: LISTEN again at the next beat (harmless if it still held).
      subscribed = false;
    }
  }
  const beat = () => (beating ??= beatOnce().finally(() => (beating = undefined)));

  return {
    counter,
    live: () => subscribed && now() - lastOk <= graceMs,
    onNotify(channel, payload) {
      if (channel !== DATA_VERSIONS_CHANNEL) return;
      const space = payload.indexOf(' ');
      const table = space < 0 ? payload : payload.slice(0, space);
      if (space >= 0 && payload.slice(space + 1) === deps.origin) return;
      bumpTable(table);
    },
    onClose() {
      subscribed = false;
    },
    async start() {
      await beat();
      timer = setInterval(() => void beat(), heartbeatMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
