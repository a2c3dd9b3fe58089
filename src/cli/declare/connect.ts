import { readFile } from 'node:fs/promises';
import { daemonSocketOf, type CliContext } from '../cli-context.ts';
import { UsageError } from '../cli-args.ts';
import { createApiClient, type ApiClient } from './api-client.ts';
import type { DeclareArgs } from './declare-args.ts';
import { DocumentError } from './document.ts';

async function readPem(flag: string, file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(e as Error).message}`);
  }
}

/** The API client the options ask for: HTTPS with a client certificate, or the local unix socket. */
export async function connect(args: DeclareArgs, ctx: CliContext): Promise<ApiClient> {
  if (args.url === undefined) return createApiClient({ socketPath: daemonSocketOf(ctx) });
  return createApiClient({
    url: args.url,
    clientCert: await readPem('--client-cert', args.clientCert!),
    clientKey: await readPem('--client-key', args.clientKey!),
    ...(args.serverCert ? { serverCert: await readPem('--server-cert', args.serverCert) } : {}),
  });
}

/** The document's text: a file, or stdin for `-`. */
export async function readDocumentText(file: string, ctx: CliContext): Promise<string> {
  if (file === '-') {
    if (!ctx.readStdin) throw new UsageError('no stdin to read the document from');
    return ctx.readStdin();
  }
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    throw new DocumentError(`document: cannot read ${file}: ${(e as Error).message}`);
  }
}
