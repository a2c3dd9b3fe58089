import { setTimeout as sleep } from 'node:timers/promises';
import type { CliArgs } from '../cli-args.ts';
import { daemonSocketOf, type CliContext } from '../cli-context.ts';
import { getOverUnix } from '../unix-api.ts';

/** `svcd waitready [--timeout S]`: 0 once GET /1.0 answers 200 on the unix socket; 1 with a message at the timeout. */
export async function waitready(args: CliArgs, ctx: CliContext): Promise<number> {
  const socket = daemonSocketOf(ctx);
  const deadline = args.timeoutSec === undefined ? Infinity : Date.now() + args.timeoutSec * 1000;
  for (;;) {
    const left = deadline - Date.now();
    const answered = await getOverUnix(socket, '/1.0', Math.max(1, Math.min(5_000, left))).then(
      (r) => r.status === 200,
      () => false,
    );
    if (answered) return 0;
    if (Date.now() >= deadline) {
      ctx.err(`svcd: the daemon did not answer on ${socket} within ${args.timeoutSec} s`);
      return 1;
    }
    await sleep(Math.max(0, Math.min(100, deadline - Date.now())));
  }
}
