import { createReadStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';

/** Files opened now and served later as one stream of the sizes they had when opened; the stream closes them. */
export function openedBytes(parts: { fh: FileHandle; size: number }[]) {
  const closeAll = async () => {
    await Promise.all(parts.map((p) => p.fh.close().catch(() => {})));
  };
  return {
    size: parts.reduce((n, p) => n + p.size, 0),
    stream(): Readable {
      if (parts.every((p) => p.size === 0)) {
        void closeAll();
        return Readable.from([]);
      }
      if (parts.length === 1)
        return createReadStream('', { fd: parts[0]!.fh, start: 0, end: parts[0]!.size - 1, autoClose: true });
      async function* bytes() {
        try {
          for (const { fh, size } of parts)
            if (size > 0) yield* createReadStream('', { fd: fh, start: 0, end: size - 1, autoClose: false });
        } finally {
          await closeAll();
        }
      }
      return Readable.from(bytes());
    },
    close: closeAll,
  };
}
