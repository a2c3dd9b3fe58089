import { AbandonedRunError, awaitWithGrace } from './await-with-grace.ts';
import { computeBackoff } from './backoff.ts';
import type { TimerHandle } from './clock.ts';
import { createKeyedQueue, type QueueItem } from './keyed-queue.ts';
import { createResyncPass, type ResyncPassResult } from './resync-pass.ts';
import { isTerminalError, terminalMessageOf } from './terminal-error.ts';
import type { ReconcileResult, Reconciler, RuntimeLogger } from './types.ts';
import type { KeyStatus, ReconcileManager, ReconcileManagerDeps } from './reconcile-manager-types.ts';
import { listKeysOf, queueListed, type KeyLists } from './list-keys.ts';
import { createWatchFanout } from './watches.ts';

export type { KeyStatus, ReconcileManager, ReconcileManagerDeps };

const DEFAULTS = {
  concurrency: 4,
  backoff: { baseMs: 500, maxMs: 60_000 },
  resyncIntervalMs: 5 * 60_000,
  startupTierTimeoutMs: 10_000,
  reconcileTimeoutMs: 10 * 60_000,
  abortGraceMs: 30_000,
} as const;

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

export function createReconcileManager(deps: ReconcileManagerDeps): ReconcileManager {
  const { clock, settler, log } = deps;
  const backoff = deps.backoff ?? DEFAULTS.backoff;
  const resyncIntervalMs = deps.resyncIntervalMs ?? DEFAULTS.resyncIntervalMs;
  const reconcileTimeoutMs = deps.reconcileTimeoutMs ?? DEFAULTS.reconcileTimeoutMs;
  const abortGraceMs = deps.abortGraceMs ?? DEFAULTS.abortGraceMs;

  const byKind = new Map<string, Reconciler>();
  for (const r of deps.reconcilers) {
    if (byKind.has(r.kind)) throw new Error(`duplicate reconciler kind: ${r.kind}`);
    byKind.set(r.kind, r);
  }

  const states = new Map<string, KeyStatus>();
  const inflight = new Map<string, AbortController>();
  const queue = createKeyedQueue({
    clock,
    concurrency: deps.concurrency ?? DEFAULTS.concurrency,
    process: (item) =>
      runOne(item).finally(() => {
        const id = idOf(item.kind, item.key);
        pass.ran(id);
        startupPass?.ran(id);
      }),
    onError: (err, item) => log.error({ err, kind: item.kind, key: item.key }, 'reconcile run crashed'),
  });
  const fanout = createWatchFanout({
    watches: deps.watches ?? [],
    enqueue: (kind, key, reason) => {
      if (!byKind.has(kind)) throw new Error(`unknown reconciler kind: ${kind}`);
      add(kind, key, reason);
    },
    log,
  });
  for (const kind of fanout.kinds())
    if (!byKind.has(kind)) throw new Error(`watch of unknown reconciler kind: ${kind}`);
  let phase: 'new' | 'started' | 'stopped' = 'new';
  /** Enqueued before start(), or for a startup tier not reached yet: queued when their tier comes. */
  const beforeStart: [string, string, string][] = [];
  const tierOf = (kind: string) => byKind.get(kind)?.startupTier ?? 1;
  /** The startup tier being reconciled: keys of higher tiers wait (Infinity once start() is done). */
  let startupTierNow = Number.NEGATIVE_INFINITY;
  /** The keys of the startup tier under way, ticked off as they run. */
  let startupPass: ReturnType<typeof createResyncPass> | undefined;
  const add = (kind: string, key: string, reason: string) => {
    if (tierOf(kind) > startupTierNow) return void beforeStart.push([kind, key, reason]);
    queue.add(kind, key, reason);
  };
  let resyncTimer: TimerHandle | undefined;
  /** The resync pass under way: its keys ticked off as they run, its time logged at the end. */
  const pass = createResyncPass({ clock });
  let stopPromise: Promise<void> | undefined;

  const idOf = (kind: string, key: string): string => `${kind}\u0000${key}`;

  const addListed = (lists: KeyLists, reason: string, onKey?: (id: string) => void) =>
    queueListed(lists, reason, { add: queue.add, idOf, log }, onKey);

  const sweep = async (reason: string, onKey?: (id: string) => void, reconcilers = [...byKind.values()]) =>
    addListed(await listKeysOf(reconcilers, reason, log), reason, onKey);

  /** What was enqueued for a startup tier now reached: queued now. */
  function releaseWaiting(): void {
    for (const [kind, key, reason] of beforeStart.splice(0)) add(kind, key, reason);
  }

  /** Every key of one startup tier queued and run once (whatever the outcome), or the tier's time is up. */
  async function runStartupTier(tier: number, kinds: Reconciler[], listed: KeyLists): Promise<void> {
    const tierPass = createResyncPass({ clock });
    startupPass = tierPass;
    const done = tierPass.begin(`startup tier ${tier}`);
    releaseWaiting();
    addListed(listed, 'startup', (id) => tierPass.add(id));
    tierPass.listed();
    const timeoutMs = deps.startupTierTimeoutMs ?? DEFAULTS.startupTierTimeoutMs;
    let timer: TimerHandle | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = clock.setTimer(() => resolve('timeout'), timeoutMs);
    });
    const outcome = await Promise.race([done, timedOut]);
    if (timer) clock.clearTimer(timer);
    startupPass = undefined;
    if (outcome === 'timeout')
      log.warn({ tier, kinds: kinds.map((k) => k.kind), timeoutMs }, 'startup tier not done in time; going on');
    else
      log.info(
        { tier, kinds: kinds.map((k) => k.kind), keys: outcome.keys, tookMs: outcome.tookMs },
        'startup tier reconciled',
      );
  }

  function resync(reason: string): Promise<ResyncPassResult> {
    if (pass.running()) return Promise.reject(new Error('a resync pass is already under way'));
    const done = pass.begin(reason);
    void sweep(reason, (id) => pass.add(id))
      .catch((err: unknown) => log.error({ err }, 'resync failed'))
      .finally(() => pass.listed());
    return done.then((r) => {
      log.info({ ...r }, 'resync pass done');
      return r;
    });
  }

  function scheduleResync(): void {
    resyncTimer = clock.setTimer(() => {
      resyncTimer = undefined;
      if (phase !== 'started') return;
      scheduleResync();
      if (pass.running()) return log.warn({}, 'previous resync pass still running; skipping this one');
      void resync('resync');
    }, resyncIntervalMs);
  }

  /** Records a failure of the bookkeeping itself and retries the key with backoff. */
  function retryAfterSettlerError(item: QueueItem, klog: RuntimeLogger, err: unknown): void {
    const id = idOf(item.kind, item.key);
    const failures = (states.get(id)?.failures ?? 0) + 1;
    const delay = computeBackoff(failures, backoff);
    states.set(id, { failures, lastError: `settler: ${messageOf(err)}`, nextRetryAt: clock.now() + delay });
    klog.error({ err, failures, retryInMs: delay }, 'settler failed; key will be retried');
    queue.addAfter(item.kind, item.key, delay, 'retry');
  }

  async function onSuccess(item: QueueItem, klog: RuntimeLogger, result: ReconcileResult | undefined): Promise<void> {
    const { kind, key } = item;
    const recovered = states.delete(idOf(kind, key));
    const { observedGeneration, requeueAfterMs, facts, gone, removeRows, afterSettle } = result ?? {};
    klog.debug({ observedGeneration, requeueAfterMs }, 'reconciled');
    if (requeueAfterMs !== undefined) queue.addAfter(kind, key, requeueAfterMs, 'requeue');
    if (observedGeneration === undefined) return fanout.succeeded(kind, key, undefined, recovered);
    try {
      await settler.converged(kind, key, observedGeneration, facts, gone, removeRows);
    } catch (err) {
      return retryAfterSettlerError(item, klog, err);
    }
    afterSettle?.();
    await fanout.succeeded(kind, key, observedGeneration, recovered);
  }

  async function onTerminal(item: QueueItem, klog: RuntimeLogger, err: unknown): Promise<void> {
    const message = terminalMessageOf(err);
    states.set(idOf(item.kind, item.key), { failures: 0, lastError: message });
    klog.error({ err }, 'reconcile failed terminally; waiting for a new trigger');
    try {
      await settler.failed(item.kind, item.key, message, true);
    } catch (settlerErr) {
      retryAfterSettlerError(item, klog, settlerErr);
    }
  }

  async function onTransient(item: QueueItem, klog: RuntimeLogger, err: unknown, message: string): Promise<void> {
    const id = idOf(item.kind, item.key);
    const failures = (states.get(id)?.failures ?? 0) + 1;
    const delay = computeBackoff(failures, backoff);
    states.set(id, { failures, lastError: message, nextRetryAt: clock.now() + delay });
    klog.warn({ err, failures, retryInMs: delay }, 'reconcile failed; will retry');
    queue.addAfter(item.kind, item.key, delay, 'retry');
    try {
      await settler.failed(item.kind, item.key, message, false);
    } catch (settlerErr) {
      klog.error({ err: settlerErr }, 'settler failed to record a transient error; retry already scheduled');
    }
  }

  async function runOne(item: QueueItem): Promise<void> {
    const { kind, key, reason } = item;
    const reconciler = byKind.get(kind);
    if (reconciler === undefined) return; // enqueue() rejects unknown kinds
    const id = idOf(kind, key);
    const klog = log.child?.({ kind, key }) ?? log;

    // This run decides what comes next, so an older delayed retry is obsolete.
    queue.cancelDelayed(kind, key);
    const previous = states.get(id);
    if (previous !== undefined) delete previous.nextRetryAt;
    const attempt = previous?.failures ?? 0;

    const controller = new AbortController();
    let timedOut = false;
    const timeout = clock.setTimer(() => {
      timedOut = true;
      controller.abort(new Error(`reconcile timed out after ${reconcileTimeoutMs}ms`));
    }, reconcileTimeoutMs);
    inflight.set(id, controller);
    klog.debug({ reason, attempt }, 'reconcile start');

    let result: ReconcileResult | undefined;
    let error: unknown;
    let failed = false;
    try {
      const ctx = { kind, key, attempt, signal: controller.signal, reason };
      result = await awaitWithGrace(() => reconciler.reconcile(key, ctx), {
        clock,
        signal: controller.signal,
        graceMs: abortGraceMs,
      });
    } catch (err) {
      failed = true;
      error = err;
    } finally {
      clock.clearTimer(timeout);
      inflight.delete(id);
    }

    if (!failed) return onSuccess(item, klog, result);
    if (error instanceof AbandonedRunError) {
      klog.error({ err: error }, 'reconcile ignored its abort signal; abandoned (it may still be running)');
    }
    if (timedOut) return onTransient(item, klog, error, `reconcile timed out after ${reconcileTimeoutMs}ms`);
    if (phase === 'stopped') {
      klog.info({ err: error }, 'reconcile aborted by shutdown');
      return;
    }
    if (isTerminalError(error)) return onTerminal(item, klog, error);
    return onTransient(item, klog, error, messageOf(error));
  }

  return {
    async start() {
      if (phase !== 'new') throw new Error(`reconcile manager cannot start: already ${phase}`);
      phase = 'started';
      log.info({ kinds: [...byKind.keys()] }, 'reconcile manager starting');
      const tiers = [...new Set([...byKind.values()].map((r) => tierOf(r.kind)))].sort((a, b) => a - b);
      for (const [i, tier] of tiers.entries()) {
        const kinds = [...byKind.values()].filter((r) => tierOf(r.kind) === tier);
        // Listed while what was enqueued for this tier still waits, then queued with it in one go: a key is
        // run once for both (a container's drift seen at start and the sweep), not once for each.
        const listed = await listKeysOf(kinds, 'startup', log);
        if (phase !== 'started') return;
        startupTierNow = i === tiers.length - 1 ? Number.POSITIVE_INFINITY : tier;
        if (startupTierNow === Number.POSITIVE_INFINITY) {
          releaseWaiting();
          addListed(listed, 'startup');
          break;
        }
        await runStartupTier(tier, kinds, listed);
        if (phase !== 'started') return;
      }
      if (phase === 'started') scheduleResync();
    },
    resync(reason) {
      if (phase !== 'started') return Promise.reject(new Error(`reconcile manager is ${phase}: no resync`));
      return resync(reason);
    },
    enqueue(kind, key, reason) {
      if (!byKind.has(kind)) throw new Error(`unknown reconciler kind: ${kind}`);
      // Nothing converges before start(): what the daemon decides at start (the boot plan's desired
      // power) must be in place before any reconcile reads desired state.
      if (phase === 'new') return void beforeStart.push([kind, key, reason]);
      add(kind, key, reason);
    },
    enqueueAfter(kind, key, delayMs, reason) {
      if (!byKind.has(kind)) throw new Error(`unknown reconciler kind: ${kind}`);
      // Before start() every key is reconciled by the startup sweep anyway.
      if (phase === 'new') return void beforeStart.push([kind, key, reason]);
      queue.addAfter(kind, key, delayMs, reason);
    },
    stop() {
      if (stopPromise !== undefined) return stopPromise;
      phase = 'stopped';
      if (resyncTimer !== undefined) clock.clearTimer(resyncTimer);
      resyncTimer = undefined;
      for (const controller of inflight.values()) controller.abort(new Error('reconcile manager stopping'));
      stopPromise = queue.shutdown().then(() => log.info({}, 'reconcile manager stopped'));
      return stopPromise;
    },
    idle: () => queue.idle(),
    status(kind, key) {
      const s = states.get(idOf(kind, key));
      return s === undefined ? undefined : { ...s };
    },
  };
}
