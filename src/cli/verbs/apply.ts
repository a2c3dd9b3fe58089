import type { CliArgs } from '../cli-args.ts';
import type { CliContext } from '../cli-context.ts';
import { connect, readDocumentText } from '../declare/connect.ts';
import { renderPlan } from '../declare/compute-plan.ts';
import { DECLARE_USAGE, parseDeclareArgs, REMOTE_USAGE } from '../declare/declare-args.ts';
import { parseDocument } from '../declare/parse-document.ts';
import { reportFailure } from '../declare/report-failure.ts';
import { applyDeclaration, planDeclaration } from '../declare/run-declaration.ts';

/**
 * `svcd apply -f FILE|- [--dry-run] [--prune]`: make the server match the document. Prints the plan,
 * carries it out and waits until the host has converged. 0 done (or nothing to do), 1 invalid
 * document or failure (nothing is written when the document is invalid), 2 usage.
 */
export async function apply(args: CliArgs, ctx: CliContext): Promise<number> {
  const opts = parseDeclareArgs('apply', args.rest ?? []);
  if (opts.help) {
    ctx.out(`${DECLARE_USAGE.apply}\n${REMOTE_USAGE}`);
    return 0;
  }
  let api: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    const doc = parseDocument(await readDocumentText(opts.file!, ctx), 'apply');
    api = await connect(opts, ctx);
    const mode = { mode: 'apply' as const, prune: opts.prune };
    const { plan } = await planDeclaration(api, doc, mode);
    for (const line of renderPlan(plan)) ctx.out(line);
    if (!opts.dryRun)
      await applyDeclaration(api, doc, plan, { ...mode, parallel: opts.parallel, waitSec: opts.waitSec });
    return 0;
  } catch (e) {
    return reportFailure(e, ctx, 1);
  } finally {
    api?.close();
  }
}
