import { runCli } from './run-cli.ts';

/** The `svcd` command (bin/svcd runs the build of this file): one entry point, a verb per file. */
runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
}).then(
  (code) => {
    if (code !== undefined) process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`svcd: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
