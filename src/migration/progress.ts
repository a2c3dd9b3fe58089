/** How often fs_progress is written to the operation (each write is an operation event and a row update). */
const EVERY_MS = 1_000;

/** LXD's units.GetByteSizeString(n, 2): decimal units, two decimals. */
export function byteSize(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${n}B` : `${v.toFixed(2)}${units[i]}`;
}

/**
 * `fs_progress` in the operation's metadata while data flows, as LXD renders it
 * (`<volume>: 12.34MB (5.67MB/s)`), which lxc prints under the copy. Bytes of every session add up.
 */
export function progressReporter(
  ctx: { setMetadata(m: Record<string, unknown>): Promise<void> },
  volume: string,
  clock: () => number = Date.now,
) {
  const started = clock();
  let done = 0;
  let session = 0;
  let last = 0;
  let pending: Promise<void> = Promise.resolve();
  const write = () => {
    const total = done + session;
    const secs = Math.max((clock() - started) / 1000, 0.001);
    const line = `${volume}: ${byteSize(total)} (${byteSize(Math.round(total / secs))}/s)`;
    pending = pending.then(() => ctx.setMetadata({ fs_progress: line }).catch(() => undefined));
  };
  return {
    /** The running total of the current session. */
    bytes(total: number) {
      if (total < session) done += session;
      session = total;
      const now = clock();
      if (now - last >= EVERY_MS) {
        last = now;
        write();
      }
    },
    /** The last figure, written; waits for the writes in flight. */
    async flush() {
      write();
      await pending;
    },
  };
}
