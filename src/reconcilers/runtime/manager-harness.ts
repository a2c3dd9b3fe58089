import assert from 'node:assert/strict';
import { createManualClock } from './clock.ts';
import { createReconcileManager, type ReconcileManagerDeps } from './reconcile-manager.ts';
import { createTestLogger } from './test-logger.ts';
import type { ReconcileContext, ReconcileResult, Reconciler, RemoveRows, Settler } from './types.ts';

/** Test support for the reconcile manager: fake reconcilers and settler on a manual clock. */

export type Impl = (key: string, ctx: ReconcileContext) => Promise<ReconcileResult>;

export interface Call {
  key: string;
  at: number;
  attempt: number;
  reason: string;
  signal: AbortSignal;
}

export interface FakeReconciler extends Reconciler {
  calls: Call[];
  keys: string[];
  impl: Impl;
  listKeysError?: Error;
}

export function fakeReconciler(kind: string, keys: string[], now: () => number): FakeReconciler {
  const r: FakeReconciler = {
    kind,
    keys,
    calls: [],
    impl: async () => ({}),
    async listKeys() {
      if (r.listKeysError) throw r.listKeysError;
      return [...r.keys];
    },
    reconcile(key, ctx) {
      r.calls.push({ key, at: now(), attempt: ctx.attempt, reason: ctx.reason, signal: ctx.signal });
      return r.impl(key, ctx);
    },
  };
  return r;
}

export type SettlerCall = ['converged', string, string, number] | ['failed', string, string, string, boolean];

export function fakeSettler() {
  const calls: SettlerCall[] = [];
  const s = {
    calls,
    convergedError: undefined as Error | undefined,
    failedError: undefined as Error | undefined,
    /** Facts recorded with a convergence: [kind, key, facts]. */
    facts: [] as [string, string, Record<string, unknown>][],
    /** Row removals handed with a convergence. */
    removals: [] as RemoveRows[],
    async converged(
      kind: string,
      key: string,
      gen: number,
      facts?: Record<string, unknown>,
      _gone?: boolean,
      removeRows?: RemoveRows,
    ) {
      calls.push(['converged', kind, key, gen]);
      if (facts) s.facts.push([kind, key, facts]);
      if (removeRows) s.removals.push(removeRows);
      if (s.convergedError) throw s.convergedError;
    },
    async failed(kind: string, key: string, message: string, terminal: boolean) {
      calls.push(['failed', kind, key, message, terminal]);
      if (s.failedError) throw s.failedError;
    },
  } satisfies Settler & Record<string, unknown>;
  return s;
}

export function createManagerHarness(kinds: Record<string, string[]>, opts: Partial<ReconcileManagerDeps> = {}) {
  const clock = createManualClock(0);
  const log = createTestLogger();
  const settler = fakeSettler();
  const reconcilers = Object.entries(kinds).map(([kind, keys]) => fakeReconciler(kind, keys, clock.now));
  const manager = createReconcileManager({ clock, reconcilers, settler, log, ...opts });
  const r = (kind: string): FakeReconciler => {
    const found = reconcilers.find((x) => x.kind === kind);
    assert.ok(found);
    return found;
  };
  return { clock, log, settler, reconcilers, manager, r };
}

/** A reconcile that only ends when its signal aborts, rejecting with the abort reason. */
export const untilAborted: Impl = (_key, ctx) =>
  new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
