import { DaemonConfigError } from '../config/daemon-config.ts';
import { parseCliArgs, UsageError, type CliArgs } from './cli-args.ts';
import type { CliContext } from './cli-context.ts';

/** A verb's run: its exit code, or undefined when it keeps running (the daemon). */
type VerbRun = (args: CliArgs, ctx: CliContext) => Promise<number | undefined>;

interface Verb {
  summary: string;
  /** Whether `--timeout S` means something to it. */
  timeout: boolean;
  /** The verb flags it takes (cli-args.ts FLAGS). */
  flags?: string[];
  /** Loaded when used: `svcd version` does not load the daemon's code. */
  load(): Promise<VerbRun>;
}

/** One entry per verb, one file per verb under verbs/ (the admin verbs go here too). */
const VERBS: Record<string, Verb> = {
  daemon: {
    summary: 'run the daemon (the default)',
    timeout: false,
    load: async () => (await import('./verbs/daemon.ts')).daemon,
  },
  waitready: {
    summary: 'wait until the daemon answers on its unix socket',
    timeout: true,
    load: async () => (await import('./verbs/waitready.ts')).waitready,
  },
  shutdown: {
    summary: 'host shutdown: stop the containers by boot.stop.priority, then the daemon; waits for it to exit',
    timeout: true,
    load: async () => (await import('./verbs/shutdown.ts')).shutdown,
  },
  init: {
    summary: 'set the server up as lxd init does: --auto, --preseed (YAML on stdin), --dump',
    timeout: false,
    load: async () => (await import('./verbs/init.ts')).init,
  },
  apply: {
    summary: 'make the server match a document: apply -f FILE|- [--dry-run] [--prune] (docs/declarative.md)',
    timeout: false,
    load: async () => (await import('./verbs/apply.ts')).apply,
  },
  diff: {
    summary: 'print what apply --prune would do: diff -f FILE|-; exit 0 same, 1 differs',
    timeout: false,
    load: async () => (await import('./verbs/diff.ts')).diff,
  },
  ui: {
    summary: 'print a one-time dashboard login URL (valid 5 min); --sessions lists sessions, --revoke-all ends them',
    timeout: false,
    flags: ['--revoke-all', '--sessions'],
    load: async () => (await import('./verbs/ui.ts')).ui,
  },
  version: {
    summary: "print svcd's version",
    timeout: false,
    load: async () => (await import('./verbs/version.ts')).version,
  },
};

/** The `--help` text. */
export function usage(): string {
  const width = Math.max('--timeout S'.length, ...Object.keys(VERBS).map((v) => v.length)) + 2;
  return [
    'Usage: svcd [verb] [--timeout S] [--help] [verb flags]',
    '',
    'Verbs:',
    ...Object.entries(VERBS).map(([name, v]) => `  ${name.padEnd(width)}${v.summary}`),
    '',
    'Options:',
    `  ${'--timeout S'.padEnd(width)}waitready, shutdown: give up after S seconds (exit 1); default: no limit`,
    `  ${'-h, --help'.padEnd(width)}this text`,
    '',
    'Environment: SVCD_DIR (state directory, default /var/lib/svcd: the unix socket is $SVCD_DIR/unix.socket),',
    'DATABASE_URL, SVCD_LOG_LEVEL, SVCD_NODE_NAME (see docs/configuration.md).',
  ].join('\n');
}

/**
 * `svcd …`: parse, pick the verb, run it. Exit codes: the verb's; 2 for a usage error (with the usage)
 * or invalid settings; undefined while the daemon runs.
 */
export async function runCli(argv: readonly string[], ctx: CliContext): Promise<number | undefined> {
  let args: CliArgs;
  try {
    args = parseCliArgs(argv);
    if (args.help) {
      ctx.out(usage());
      return 0;
    }
    const verb = VERBS[args.verb];
    if (!verb) throw new UsageError(`unknown verb '${args.verb}'`);
    if (args.timeoutSec !== undefined && !verb.timeout) throw new UsageError(`svcd ${args.verb} takes no --timeout`);
    for (const f of args.flags ?? [])
      if (!verb.flags?.includes(f)) throw new UsageError(`svcd ${args.verb} takes no ${f}`);
    return await (await verb.load())(args, ctx);
  } catch (e) {
    if (e instanceof UsageError) {
      ctx.err(`svcd: ${e.message}\n\n${usage()}`);
      return 2;
    }
    if (e instanceof DaemonConfigError) {
      ctx.err(`svcd: ${e.message}`);
      return 2;
    }
    throw e;
  }
}
