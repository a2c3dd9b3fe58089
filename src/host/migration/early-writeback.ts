import { syncFilesystem } from '../storage/sync-filesystem.ts';

/** Received bytes between two flushes of the file system a stream is written to. */
export const WRITEBACK_EVERY = 128 * 1024 * 1024;

/**
 * Writes a received stream out to disk while it still arrives, not all at the end. Linux keeps what
 * `btrfs receive` writes in memory until its dirty limits or 30 s, so the sync that ends a transfer (what
 * makes the copy durable, before a move deletes its source) would wait for all of it at once, after the
 * stream: 0.8-3.4 s per GiB here. Flushing the file system (`sync -f`, syncfs(2)) every `every` bytes
 * received lets the disk work while the relay is busy, and leaves that last sync 10-20 ms
 * (docs/benchmarks/2026-12-07-writeback.md). One flush at a time. A flush that fails is ignored: the last
 * sync writes everything out anyway, and fails the transfer if it cannot.
 */
export function earlyWriteback(
  dir: string,
  opts: { every?: number; signal?: AbortSignal; flush?: (dir: string, signal?: AbortSignal) => Promise<void> } = {},
) {
  const every = opts.every ?? WRITEBACK_EVERY;
  const flushFs = opts.flush ?? syncFilesystem;
  let flushedAt = 0;
  let inFlight: Promise<void> | undefined;
  let flushes = 0;
  const flush = () => {
    flushes++;
    inFlight = flushFs(dir, opts.signal)
      .then(
        () => {},
        () => {},
      )
      .finally(() => (inFlight = undefined));
  };
  return {
    /** The stream's running total of bytes. */
    onBytes(total: number): void {
      if (inFlight || total - flushedAt < every) return;
      flushedAt = total;
      flush();
    },
    /** Waits for a flush still running (none is left behind the stream). */
    async settle(): Promise<void> {
      await inFlight;
    },
    get flushes() {
      return flushes;
    },
  };
}

/** Runs a receive with early writeback on `dir`: `run` gets the byte counter to report to, which also tells `o`. */
export async function withEarlyWriteback<T>(
  dir: string,
  o: { signal?: AbortSignal; onBytes?: ((total: number) => void) | undefined },
  run: (onBytes: (total: number) => void) => Promise<T>,
): Promise<T> {
  const writeback = earlyWriteback(dir, { signal: o.signal });
  try {
    return await run((n) => {
      o.onBytes?.(n);
      writeback.onBytes(n);
    });
  } finally {
    await writeback.settle();
  }
}
