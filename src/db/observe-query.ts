/**
 * A postgres.js query is lazy: it runs when awaited (its `then` is called), so what must happen when it
 * settles is hooked into `then` itself, not chained on (a chained `then` would run it now). The hooks see
 * the outcome and the caller's handlers get it unchanged: a value passes through, an error is rethrown.
 */
export function observeQuery<Q extends PromiseLike<unknown>>(
  q: Q,
  hooks: { fulfilled?(): void; rejected?(error: unknown): void },
): Q {
  const then = q.then.bind(q);
  (q as { then: PromiseLike<unknown>['then'] }).then = (ok, ko) =>
    then(
      (v) => (hooks.fulfilled?.(), ok ? ok(v) : v) as never,
      (e: unknown) => (hooks.rejected?.(e), ko ? ko(e) : Promise.reject(e as Error)) as never,
    );
  return q;
}
