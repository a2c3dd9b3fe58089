import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from './api-client.ts';
import { checkReferences } from './check-references.ts';
import { computePlan, type Plan, type PlanOptions } from './compute-plan.ts';
import { DocumentError, type HostDoc } from './document.ts';
import { executePlan } from './execute-plan.ts';
import { readHost } from './read-host.ts';
import type { HostState } from './host-state.ts';

/** Read the server, compute the plan, and check the whole document against both: nothing is written. */
export async function planDeclaration(
  api: ApiClient,
  doc: HostDoc,
  opts: PlanOptions,
): Promise<{ plan: Plan; host: HostState }> {
  const host = await readHost(api, { images: (doc.containers ?? []).length > 0 });
  const plan = computePlan(doc, host, opts);
  checkReferences(doc, host, plan);
  return { plan, host };
}

/**
 * Carry the plan out, then wait until the host has converged: the same document planned again is
 * empty (containers running or stopped as asked, config as written). Throws a DocumentError naming
 * what did not converge by `waitSec`.
 */
export async function applyDeclaration(
  api: ApiClient,
  doc: HostDoc,
  plan: Plan,
  opts: PlanOptions & { parallel: number; waitSec: number },
): Promise<void> {
  if (!plan.steps.length) return;
  await executePlan(api, plan, opts);
  const deadline = Date.now() + opts.waitSec * 1000;
  for (let delay = 50; ; delay = Math.min(1000, delay * 2)) {
    const left = computePlan(doc, await readHost(api, { images: false }), opts).steps;
    if (!left.length) return;
    if (Date.now() > deadline)
      throw new DocumentError(
        `the host has not converged within ${opts.waitSec} s: ${left
          .map((s) => `${s.kind} "${s.name}" (${s.action}${s.keys.length ? `: ${s.keys.join(', ')}` : ''})`)
          .join('; ')}`,
      );
    await sleep(delay);
  }
}
