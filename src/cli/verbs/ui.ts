import type { CliArgs } from '../cli-args.ts';
import { daemonSocketOf, type CliContext } from '../cli-context.ts';
import { isNotListening, requestOverUnix, type ApiAnswer } from '../unix-api.ts';

type Meta = Record<string, unknown>;
const metadataOf = (a: ApiAnswer) => ((a.json as { metadata?: unknown } | undefined)?.metadata ?? {}) as Meta;
const errorOf = (a: ApiAnswer) => String((a.json as { error?: unknown } | undefined)?.error ?? `HTTP ${a.status}`);

/**
 * `svcd ui`: a one-time login URL for the dashboard, on the last line (the daemon makes it, over its unix
 * socket: only who may use the socket gets one). `--sessions` lists the browser sessions, `--revoke-all`
 * ends them all (and unused URLs).
 */
export async function ui(args: CliArgs, ctx: CliContext): Promise<number> {
  const socket = daemonSocketOf(ctx);
  const flags = args.flags ?? [];
  const [method, path] = flags.includes('--revoke-all')
    ? ['DELETE', '/ui/sessions']
    : flags.includes('--sessions')
      ? ['GET', '/ui/sessions']
      : ['POST', '/ui/tokens'];
  let answer: ApiAnswer;
  try {
    answer = await requestOverUnix(socket, method, path);
  } catch (e) {
    ctx.err(isNotListening(e) ? `svcd: no daemon answers on ${socket}` : `svcd: ${(e as Error).message}`);
    return 1;
  }
  if (answer.status !== 200) {
    ctx.err(`svcd: ${errorOf(answer)}`);
    return 1;
  }
  if (method === 'DELETE') {
    ctx.out(`Ended ${Number(metadataOf(answer).revoked ?? 0)} dashboard session(s); unused login URLs no longer work.`);
    return 0;
  }
  if (method === 'GET') {
    const list = (answer.json as { metadata?: Meta[] }).metadata ?? [];
    if (list.length === 0) ctx.out('No dashboard sessions.');
    for (const s of list)
      ctx.out(
        `${s.id}  since ${s.created_at}  until ${s.expires_at}  from ${s.address || '-'}  ${s.user_agent || ''}`.trimEnd(),
      );
    return 0;
  }
  const meta = metadataOf(answer);
  ctx.out(`Open this URL in a browser (it works once, until ${String(meta.expires_at)}):`);
  ctx.out(String(meta.url));
  return 0;
}
