import type { CliArgs } from '../cli-args.ts';
import type { CliContext } from '../cli-context.ts';
import { connect, readDocumentText } from '../declare/connect.ts';
import { renderPlan } from '../declare/compute-plan.ts';
import { DECLARE_USAGE, parseDeclareArgs, REMOTE_USAGE } from '../declare/declare-args.ts';
import { parseDocument } from '../declare/parse-document.ts';
import { reportFailure } from '../declare/report-failure.ts';
import { planDeclaration } from '../declare/run-declaration.ts';

/** `svcd diff -f FILE|-`: print what `svcd apply --prune` would do. 0 the host matches, 1 it differs, 2 error. */
export async function diff(args: CliArgs, ctx: CliContext): Promise<number> {
  const opts = parseDeclareArgs('diff', args.rest ?? []);
  if (opts.help) {
    ctx.out(`${DECLARE_USAGE.diff}\n${REMOTE_USAGE}`);
    return 0;
  }
  let api: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    const doc = parseDocument(await readDocumentText(opts.file!, ctx), 'apply');
    api = await connect(opts, ctx);
    const { plan } = await planDeclaration(api, doc, { mode: 'apply', prune: true });
    for (const line of renderPlan(plan)) ctx.out(line);
    return plan.steps.length ? 1 : 0;
  } catch (e) {
    return reportFailure(e, ctx, 2);
  } finally {
    api?.close();
  }
}
