import { UsageError } from '../cli-args.ts';

/** The command line of `svcd init`, `svcd apply` and `svcd diff` (after the verb). */
export interface DeclareArgs {
  help: boolean;
  /** -f FILE; `-` is stdin. */
  file?: string;
  dryRun: boolean;
  prune: boolean;
  /** Objects of one kind written at once. */
  parallel: number;
  /** Seconds to wait for the host to converge after the writes. */
  waitSec: number;
  url?: string;
  clientCert?: string;
  clientKey?: string;
  serverCert?: string;
  auto: boolean;
  preseed: boolean;
  dump: boolean;
  storageBackend?: string;
  networkAddress?: string;
  networkPort?: number;
  trustPassword?: string;
}

type Verb = 'init' | 'apply' | 'diff';

const VALUED: Record<string, keyof DeclareArgs> = {
  '-f': 'file',
  '--file': 'file',
  '--parallel': 'parallel',
  '--wait': 'waitSec',
  '--url': 'url',
  '--client-cert': 'clientCert',
  '--client-key': 'clientKey',
  '--server-cert': 'serverCert',
  '--storage-backend': 'storageBackend',
  '--network-address': 'networkAddress',
  '--network-port': 'networkPort',
  '--trust-password': 'trustPassword',
};
const FLAGS: Record<string, keyof DeclareArgs> = {
  '--dry-run': 'dryRun',
  '--prune': 'prune',
  '--auto': 'auto',
  '--preseed': 'preseed',
  '--dump': 'dump',
  '--help': 'help',
  '-h': 'help',
};
const ONLY: Record<Verb, (keyof DeclareArgs)[]> = {
  init: ['auto', 'preseed', 'dump', 'storageBackend', 'networkAddress', 'networkPort', 'trustPassword', 'waitSec'],
  apply: ['file', 'dryRun', 'prune', 'parallel', 'waitSec'],
  diff: ['file'],
};
const COMMON: (keyof DeclareArgs)[] = ['help', 'url', 'clientCert', 'clientKey', 'serverCert'];

function positiveInt(flag: string, v: string, max: number): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > max)
    throw new UsageError(`${flag} needs a number from 1 to ${max}, got '${v}'`);
  return Number(v);
}

/** Parse the options of one declarative verb; throws UsageError on anything it does not take. */
export function parseDeclareArgs(verb: Verb, argv: readonly string[]): DeclareArgs {
  const out: DeclareArgs = {
    help: false,
    dryRun: false,
    prune: false,
    parallel: 10,
    waitSec: 300,
    auto: false,
    preseed: false,
    dump: false,
  };
  const given = new Set<keyof DeclareArgs>();
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i]!;
    let value: string | undefined;
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    if (eq > 0) [a, value] = [a.slice(0, eq), a.slice(eq + 1)];
    const key = VALUED[a] ?? FLAGS[a];
    if (!key) throw new UsageError(a.startsWith('-') ? `unknown option ${a}` : `unexpected argument '${a}'`);
    if (!ONLY[verb].includes(key) && !COMMON.includes(key)) throw new UsageError(`svcd ${verb} takes no ${a}`);
    given.add(key);
    if (FLAGS[a]) {
      if (value !== undefined) throw new UsageError(`${a} takes no value`);
      (out as unknown as Record<string, boolean>)[key] = true;
      continue;
    }
    value ??= argv[++i];
    if (value === undefined) throw new UsageError(`${a} needs a value`);
    if (key === 'parallel') out.parallel = positiveInt(a, value, 256);
    else if (key === 'waitSec') out.waitSec = positiveInt(a, value, 86_400);
    else if (key === 'networkPort') out.networkPort = positiveInt(a, value, 65_535);
    else (out as unknown as Record<string, string>)[key] = value;
  }
  if (out.help) return out;
  if (verb !== 'init' && !out.file) throw new UsageError(`svcd ${verb} needs -f FILE (- for stdin)`);
  if (verb === 'init') {
    const modes = [out.auto, out.preseed, out.dump].filter(Boolean).length;
    if (modes !== 1) throw new UsageError('svcd init needs exactly one of --auto, --preseed, --dump');
    for (const k of ['storageBackend', 'networkAddress', 'networkPort', 'trustPassword'] as const)
      if (given.has(k) && !out.auto)
        throw new UsageError(`--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} goes with --auto`);
    if (out.storageBackend !== undefined && !['dir', 'btrfs'].includes(out.storageBackend))
      throw new UsageError(`--storage-backend must be dir or btrfs, got '${out.storageBackend}'`);
    if (out.networkPort !== undefined && out.networkAddress === undefined)
      throw new UsageError('--network-port goes with --network-address');
  }
  if (out.url !== undefined && (!out.clientCert || !out.clientKey))
    throw new UsageError('--url needs --client-cert and --client-key');
  if (out.url === undefined && (out.clientCert || out.clientKey || out.serverCert))
    throw new UsageError('--client-cert, --client-key and --server-cert go with --url');
  return out;
}

export const DECLARE_USAGE: Record<Verb, string> = {
  init: [
    'Usage: svcd init --auto [--storage-backend dir|btrfs] [--network-address A [--network-port P]] [--trust-password W]',
    '       svcd init --preseed < preseed.yaml',
    '       svcd init --dump',
  ].join('\n'),
  apply: 'Usage: svcd apply -f FILE|- [--dry-run] [--prune] [--parallel N] [--wait S]',
  diff: 'Usage: svcd diff -f FILE|-',
};
export const REMOTE_USAGE =
  'Remote server: --url https://HOST:PORT --client-cert FILE --client-key FILE [--server-cert FILE] (default: the local unix socket, $SVCD_DIR/unix.socket)';
