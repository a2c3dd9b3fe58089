import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A session's socket directory in the temp dir: `svcd-mig-<pid>-XXXXXX`, removed when the session ends. */
export const DIR_PREFIX = 'svcd-mig-';

/** After a process exited, how long its connection may still be on its way to the accept queue. */
const LATE_CONNECTION_MS = 50;

export interface StdioSocket {
  /** The socket's path (the spawn helper's `{ socket }` target, or a `-e` command's address). */
  path: string;
  target: { socket: string };
  /**
   * The process's connection, once it made one; undefined when it exited without (its exit code and stderr then
   * say why). The server takes one connection and closes.
   */
  accept(exited: Promise<unknown>): Promise<net.Socket | undefined>;
  /** Stops listening and removes the directory (idempotent). */
  close(): Promise<void>;
}

/**
 * A unix socket in a fresh root-only directory, for one process to connect its standard streams to: the bytes
 * of a bulk stream (rsync's, btrfs send's or receive's) then pass between that process and svcd without a relay
 * through the spawn helper, which would cost two copies and a framed round trip per chunk.
 */
export async function stdioSocket(name: string): Promise<StdioSocket> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  const socketPath = path.join(dir, name);
  const server = net.createServer();
  let conn: net.Socket | undefined;
  const connected = new Promise<net.Socket>((resolve) =>
    server.once('connection', (s) => {
      server.close();
      s.on('error', () => {});
      conn = s;
      resolve(s);
    }),
  );
  const close = async () => {
    server.close();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
  } catch (e) {
    await close();
    throw e;
  }
  return {
    path: socketPath,
    target: { socket: socketPath },
    accept: (exited) =>
      Promise.race([
        connected,
        exited.then(async () => {
          await new Promise((r) => setTimeout(r, LATE_CONNECTION_MS));
          return conn;
        }),
      ]),
    close,
  };
}
