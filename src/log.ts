import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import type { EventBus } from './events/index.ts';

/**
 * The daemon's logger: JSON lines to stdout, and every entry also published as a `logging` event
 * (GET /1.0/events?type=logging). Context keys become strings as the spec's logging metadata says.
 */
export function createLogger(opts: { level: string; bus: EventBus; destination?: NodeJS.WritableStream }): Logger {
  const toBus = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        try {
          const { level, time: _t, msg, pid: _p, hostname: _h, ...rest } = JSON.parse(line) as Record<string, unknown>;
          const context: Record<string, string> = {};
          for (const [k, v] of Object.entries(rest)) context[k] = typeof v === 'string' ? v : JSON.stringify(v);
          opts.bus.publish({
            type: 'logging',
            metadata: {
              level: pino.levels.labels[level as number] ?? String(level),
              message: String(msg ?? ''),
              context,
            },
          });
        } catch {
          /* a malformed line is not worth an event */
        }
      }
      cb();
    },
  });
  return pino(
    { level: opts.level, base: { pid: process.pid } },
    pino.multistream([
      { stream: opts.destination ?? process.stdout, level: opts.level as pino.Level },
      { stream: toBus, level: opts.level as pino.Level },
    ]),
  );
}
