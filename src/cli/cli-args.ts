/** The parsed command line of `svcd`: the verb (default `daemon`), `--help`, and `--timeout S`. */
export interface CliArgs {
  verb: string;
  help: boolean;
  /** Seconds; undefined: no limit. */
  timeoutSec?: number;
  /** For a verb that parses its own options (`init`, `apply`, `diff`): everything after the verb. */
  rest?: string[];
  /** Verb flags (FLAGS) given, when any: the verb says which it takes. */
  flags?: string[];
}

/** Flags some verb takes (run-cli.ts refuses one to a verb that does not). */
export const FLAGS = ['--revoke-all', '--sessions'];

/** Verbs whose options are their own: the words after them are passed on unparsed. */
const OWN_OPTIONS = new Set(['init', 'apply', 'diff']);

export class UsageError extends Error {}

/** Parse `svcd [verb] [--timeout S] [--help] [verb flags]`; throws UsageError on a flag or value it does not know. */
export function parseCliArgs(argv: readonly string[]): CliArgs {
  const out: CliArgs = { verb: '', help: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (out.verb && OWN_OPTIONS.has(out.verb)) {
      out.rest = argv.slice(i);
      break;
    }
    if (a === '--help' || a === '-h') out.help = true;
    else if (a === '--timeout' || a.startsWith('--timeout=')) {
      const value = a === '--timeout' ? argv[++i] : a.slice('--timeout='.length);
      if (value === undefined || !/^\d+(\.\d+)?$/.test(value))
        throw new UsageError(
          `--timeout needs a number of seconds, got ${value === undefined ? 'nothing' : `'${value}'`}`,
        );
      out.timeoutSec = Number(value);
    } else if (FLAGS.includes(a)) (out.flags ??= []).push(a);
    else if (a.startsWith('-')) throw new UsageError(`unknown option ${a}`);
    else if (!out.verb) out.verb = a;
    else throw new UsageError(`unexpected argument '${a}'`);
  }
  out.verb ||= 'daemon';
  if (OWN_OPTIONS.has(out.verb)) out.rest ??= [];
  return out;
}
