import type { WebSocket } from 'ws';
import { dialMigrationSocket } from '../host/migration/dial-websocket.ts';
import { encodeMigrationControl } from '../host/migration/migration-codec.ts';
import { ControlChannel, FsChannel } from '../host/migration/ws-frames.ts';

/** LXD gives the peer 10 s to connect every channel of a migration operation. */
export const CONNECT_TIMEOUT_MS = 10_000;

/** The two channels of a stateless migration (no `criu`: live migration is refused before). */
export interface MigrationChannels {
  control: ControlChannel;
  fs: FsChannel;
  /** Tell the peer how it ended (MigrationControl); never throws (the peer may be gone). */
  report(error: Error | undefined): Promise<void>;
  /** Hang up: a normal close on control, the fs socket cut (LXD does the same, see its disconnect()). */
  close(): void;
}

function channelsOf(
  control: WebSocket,
  fs: WebSocket,
  // Each channel owns its socket's messages from the start: the peer's first bytes may come early.
  controlChannel = new ControlChannel(control),
  fsChannel = new FsChannel(fs),
): MigrationChannels {
  return {
    control: controlChannel,
    fs: fsChannel,
    async report(error) {
      const bytes = encodeMigrationControl(error ? { success: false, message: error.message } : { success: true });
      await controlChannel.send(bytes).catch(() => undefined);
    },
    close() {
      if (control.readyState === control.OPEN) control.close(1000);
      else control.terminate();
      fs.terminate();
    },
  };
}

/** Pull: connect to the other server's operation, control first, then fs (as LXD's sink does). */
export async function dialChannels(
  operationUrl: string,
  secrets: { control: string; fs: string },
  certificate: string | undefined,
  signal: AbortSignal,
): Promise<MigrationChannels> {
  const control = await dialMigrationSocket(operationUrl, secrets.control, certificate, signal);
  try {
    const fs = await dialMigrationSocket(operationUrl, secrets.fs, certificate, signal);
    return channelsOf(control, fs);
  } catch (e) {
    control.terminate();
    throw e;
  }
}

export interface SecretRegistry {
  register(
    opId: string,
    fds: readonly string[],
    onSocket: (fd: string, socket: unknown) => void,
  ): Record<string, string>;
  revoke(opId: string): void;
}

/**
 * Serve: this server's operation holds one secret per channel; the peer (or a relaying client)
 * connects to both within CONNECT_TIMEOUT_MS.
 */
export function acceptChannels(registry: SecretRegistry, opId: string) {
  const sockets: Record<string, WebSocket> = {};
  let control: ControlChannel | undefined;
  let fs: FsChannel | undefined;
  let wake: (() => void) | undefined;
  const secrets = registry.register(opId, ['control', 'fs'], (fd, socket) => {
    const ws = socket as WebSocket;
    sockets[fd] = ws;
    // the channel takes the socket's messages at once: nothing the peer sends early is lost
    if (fd === 'control') control = new ControlChannel(ws);
    else fs = new FsChannel(ws);
    if (control && fs) wake?.();
  });
  return {
    secrets: secrets as { control: string; fs: string },
    async connected(signal: AbortSignal): Promise<MigrationChannels> {
      if (!(control && fs)) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error('Timed out waiting for migration connections')),
            CONNECT_TIMEOUT_MS,
          );
          const abort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('Migration cancelled'));
          signal.addEventListener('abort', abort, { once: true });
          wake = () => {
            clearTimeout(timer);
            signal.removeEventListener('abort', abort);
            resolve();
          };
        }).catch((e: Error) => {
          for (const ws of Object.values(sockets)) ws.terminate();
          throw e;
        });
      }
      return channelsOf(sockets.control!, sockets.fs!, control!, fs!);
    },
  };
}
