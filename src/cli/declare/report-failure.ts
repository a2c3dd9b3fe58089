import type { CliContext } from '../cli-context.ts';
import { isNotListening } from '../unix-api.ts';
import { ApiError } from './api-client.ts';
import { DocumentError } from './document.ts';

/**
 * Print why a declarative verb failed and return `code`. Known failures (an invalid document, a
 * refusal by the server, no server) print one line; anything else is a bug and propagates.
 */
export function reportFailure(e: unknown, ctx: CliContext, code: number): number {
  if (e instanceof DocumentError || e instanceof ApiError) ctx.err(`svcd: ${e.message}`);
  else if (isNotListening(e)) ctx.err(`svcd: nothing answers: ${(e as Error).message}`);
  else if (e instanceof Error && 'code' in e) ctx.err(`svcd: cannot reach the server: ${e.message}`);
  else throw e;
  return code;
}
