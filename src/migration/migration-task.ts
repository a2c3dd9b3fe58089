import { randomUUID } from 'node:crypto';
import { ValidationError } from '../desired/errors.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import { acceptChannels, dialChannels, type MigrationChannels } from './migration-channels.ts';
import type { MigrationDeps } from './migration-deps.ts';
import type { TaskCtx } from './volume-stream.ts';

/** The other server's operation this side dials, and its secrets (pull for a sink, push for a source). */
export interface MigrationPeer {
  operation: string;
  secrets: { control: string; fs: string };
  certificate?: string | undefined;
}

/**
 * One migration role as an operation. With a peer, a task that dials the peer's operation; without one,
 * a websocket operation whose metadata holds this side's secrets (all strings, as lxc reads them), which
 * the peer or a relaying client connects to. The channels are closed when `run` ends, whatever it did.
 */
export async function startMigrationTask(
  deps: Pick<MigrationDeps, 'ops'>,
  spec: { description: string; project: string; resources: Record<string, string[]> },
  peer: MigrationPeer | undefined,
  run: (channels: MigrationChannels, ctx: TaskCtx) => Promise<void>,
): Promise<OperationRow> {
  const id = randomUUID();
  const accept = peer ? undefined : acceptChannels(deps.ops.websockets, id);
  try {
    return await deps.ops.startTask(
      {
        ...spec,
        id,
        class: accept ? 'websocket' : 'task',
        ...(accept ? { metadata: { ...accept.secrets } } : {}),
      },
      async (ctx) => {
        const channels = accept
          ? await accept.connected(ctx.signal)
          : await dialChannels(peer!.operation, peer!.secrets, peer!.certificate, ctx.signal);
        try {
          await run(channels, ctx);
        } finally {
          channels.close();
        }
      },
    );
  } catch (e) {
    deps.ops.websockets.revoke(id);
    throw e;
  }
}

/** Run `f`; on failure tell the peer why (MigrationControl) before the error ends the operation. */
export async function reportingFailure<T>(channels: MigrationChannels, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e));
    await channels.report(err);
    throw err;
  }
}

/**
 * The peer a request names (`source` of a pull sink, `target` of a push source), checked before anything
 * is made: its operation URL and both secrets; a `criu` secret means a live migration, which `live` refuses.
 */
export function peerOf(
  field: 'source' | 'target',
  p: { operation?: string | undefined; secrets?: Record<string, string> | undefined; certificate?: string | undefined },
  live: () => Error,
): MigrationPeer {
  const s = p.secrets ?? {};
  if (s.criu) throw live();
  if (!p.operation) throw new ValidationError(`Missing "${field}.operation": the other server's operation URL`);
  if (!s.control || !s.fs) throw new ValidationError(`Missing "${field}.secrets": the control and fs secrets`);
  return { operation: p.operation, secrets: { control: s.control, fs: s.fs }, certificate: p.certificate };
}

/** A live (CRIU) migration: this host has no CRIU, so either role refuses it before anything is made. */
export const refusedLive = () =>
  new ValidationError(
    'Unable to perform container live migration: CRIU is not available on this server (use --stateless, or stop the container)',
  );
