import type { CliArgs } from '../cli-args.ts';
import type { CliContext } from '../cli-context.ts';
import { autoPreseed } from '../declare/auto-preseed.ts';
import { connect } from '../declare/connect.ts';
import { DECLARE_USAGE, parseDeclareArgs, REMOTE_USAGE } from '../declare/declare-args.ts';
import { DocumentError, type HostDoc } from '../declare/document.ts';
import { parseDocument } from '../declare/parse-document.ts';
import { readHost } from '../declare/read-host.ts';
import { renderDump } from '../declare/render-dump.ts';
import { reportFailure } from '../declare/report-failure.ts';
import { applyDeclaration, planDeclaration } from '../declare/run-declaration.ts';

/**
 * `svcd init`, as `lxd init`: `--auto` (a default pool, the svcdbr0 bridge, the default profile's
 * root disk and eth0), `--preseed` (LXD's preseed YAML on stdin: creates what is missing, updates
 * what exists, deletes nothing) or `--dump` (the server's configuration in that form). 0 done,
 * 1 invalid input or failure (invalid input writes nothing), 2 usage.
 */
export async function init(args: CliArgs, ctx: CliContext): Promise<number> {
  const opts = parseDeclareArgs('init', args.rest ?? []);
  if (opts.help) {
    ctx.out(`${DECLARE_USAGE.init}\n${REMOTE_USAGE}`);
    return 0;
  }
  let api: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    let doc: HostDoc | undefined;
    if (opts.preseed) {
      if (!ctx.readStdin) throw new DocumentError('document: --preseed reads stdin, and there is none');
      doc = parseDocument(await ctx.readStdin(), 'preseed');
    }
    api = await connect(opts, ctx);
    if (opts.dump) {
      ctx.out(renderDump(await readHost(api, { images: false })).trimEnd());
      return 0;
    }
    doc ??= autoPreseed(await readHost(api, { images: false }), opts);
    const mode = { mode: 'preseed' as const, prune: false };
    const { plan } = await planDeclaration(api, doc, mode);
    await applyDeclaration(api, doc, plan, { ...mode, parallel: 4, waitSec: opts.waitSec });
    return 0;
  } catch (e) {
    return reportFailure(e, ctx, 1);
  } finally {
    api?.close();
  }
}
