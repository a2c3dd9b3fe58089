/** Pure argv builders for the lxc-* tools, and the parsers of their output. */

export interface LxcRef {
  name: string;
  /** The LXC path (`-P`): the directory holding `<name>/` (config, logs, state sockets). */
  lxcPath: string;
}

const ref = (r: LxcRef) => ['-n', r.name, '-P', r.lxcPath];

/** An LXC tool's own logging: only errors, into `logFile` (which overrides the container config's level). */
const errorsOnlyTo = (logFile: string | undefined) =>
  logFile !== undefined ? ['--logfile', logFile, '--logpriority', 'ERROR'] : [];

export const lxcArgs = {
  /** Daemonized start with an explicit config file (`-f`). */
  start: (r: LxcRef, configFile: string) => ['-d', ...ref(r), '-f', configFile],
  /**
   * Clean shutdown: the halt signal (SIGPWR unless `lxc.signal.halt`) to init, waiting `timeoutSec`;
   * `--nokill` so a timeout is reported (exit 1) instead of silently turning into a kill.
   */
  shutdown: (r: LxcRef, timeoutSec: number) => [
    ...ref(r),
    '-t',
    String(Math.max(1, Math.ceil(timeoutSec))),
    '--nokill',
  ],
  /** SIGKILL to every task of the container. */
  kill: (r: LxcRef) => [...ref(r), '-k'],
  freeze: (r: LxcRef) => ref(r),
  unfreeze: (r: LxcRef) => ref(r),
  /** State and init pid, raw numbers. */
  info: (r: LxcRef) => [...ref(r), '-s', '-p', '-H'],
  /**
   * Run `command` in the container with a clean environment plus `env`, as `ids.uid`/`ids.gid` when
   * given. With `logFile` (the container's `lxc.log`) lxc-attach logs only errors there: at the
   * config's level it writes some 37 lines per run.
   */
  attach: (
    r: LxcRef,
    command: readonly string[],
    env: Readonly<Record<string, string>> = {},
    ids: { uid?: number; gid?: number; logFile?: string } = {},
  ) => [
    ...ref(r),
    ...errorsOnlyTo(ids.logFile),
    '--clear-env',
    ...Object.entries(env).flatMap(([k, v]) => ['--set-var', `${k}=${v}`]),
    ...(ids.uid !== undefined ? ['--uid', String(ids.uid)] : []),
    ...(ids.gid !== undefined ? ['--gid', String(ids.gid)] : []),
    '--',
    ...command,
  ],
  /**
   * Attach to the container's console (tty 0). `-e` takes the escape prefix as `^x` or `x` and
   * maps it to `1 + (x - 'a')`: a backquote gives 0, which turns the escape sequence off, so every
   * byte a client types (Ctrl+a q included) reaches the container. Clients detach by closing.
   * With `logFile` (the container's `lxc.log`) only errors are logged there, as for attach.
   */
  console: (r: LxcRef, logFile?: string) => [...ref(r), ...errorsOnlyTo(logFile), '-t', '0', '-e', '`'],
  /** State changes of every container whose name matches `pattern` (a POSIX regex, passed as one argument). */
  monitor: (lxcPath: string, pattern = '.*') => ['-P', lxcPath, '-n', pattern],
};

/** LXC's container states (`lxc_state_t`). */
export const LXC_STATES = [
  'STOPPED',
  'STARTING',
  'RUNNING',
  'STOPPING',
  'ABORTING',
  'FREEZING',
  'FROZEN',
  'THAWED',
] as const;
export type LxcState = (typeof LXC_STATES)[number];

export const isLxcState = (s: string): s is LxcState => (LXC_STATES as readonly string[]).includes(s);

export interface ContainerState {
  state: LxcState;
  /** Init's pid in the host pid namespace, while running or frozen. */
  pid?: number;
}

/**
 * Parse `lxc-info -s -p -H`: `State:   RUNNING` / `PID:   1234` lines. With a single field lxc-info
 * prints the bare value, so a lone state word is accepted too. Throws on output it does not understand.
 */
export function parseLxcInfo(output: string): ContainerState {
  let state: LxcState | undefined;
  let pid: number | undefined;
  for (const raw of output.split('\n')) {
    const l = raw.trim();
    const m = /^(State|PID):\s*(\S+)$/.exec(l);
    const key = m?.[1];
    const value = m?.[2] ?? l;
    if ((key === 'State' || (!m && isLxcState(l))) && isLxcState(value)) state = value;
    else if (key === 'PID' && /^\d+$/.test(value)) pid = Number(value);
  }
  if (!state) throw new Error(`cannot read a container state from lxc-info output ${JSON.stringify(output)}`);
  return pid === undefined ? { state } : { state, pid };
}
