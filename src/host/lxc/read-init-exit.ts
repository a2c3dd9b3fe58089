import { open } from 'node:fs/promises';
import { type InitExit, parseInitExit } from './init-exit.ts';

/** Read the end of `logFile` (the last `maxBytes`) and parse how the run of `pid` ended; a missing log is `unknown`. */
export async function readInitExit(logFile: string, pid?: number, maxBytes = 512 * 1024): Promise<InitExit> {
  const fh = await open(logFile, 'r').catch(() => undefined);
  if (!fh) return { kind: 'unknown' };
  try {
    const { size } = await fh.stat();
    const from = Math.max(0, size - maxBytes);
    const buf = Buffer.alloc(size - from);
    await fh.read(buf, 0, buf.length, from);
    return parseInitExit(buf.toString('utf8'), pid);
  } finally {
    await fh.close();
  }
}
