/**
 * How a container's init ended, read from the container's own LXC log (`lxc.log.file`, level INFO
 * or lower). LXC 5.0.2's monitor writes, for the init it started:
 *
 *   NOTICE start.c:post_start     - Started "/sbin/init" with pid "2718"
 *   INFO   error.c:lxc_error_set_and_log - Child <2718> ended on signal Interrupt(2)
 *   INFO   error.c:lxc_error_set_and_log - Child <2718> ended on error (3)
 *
 * and nothing for an init that exited with status 0. In a child pid namespace the kernel turns
 * init's reboot(2) into a signal: SIGINT for power-off/halt, SIGHUP for restart. So (verified on
 * LXC 5.0.2): `busybox poweroff` inside, SIGUSR2/SIGPWR to init and a clean `lxc-stop` all give
 * Interrupt(2); `lxc-stop -k` and a SIGKILL of init give Killed(9); `reboot` inside gives Hangup(1).
 * A clean `lxc-stop` looks exactly like a power-off from inside: who asked is told apart by desired
 * state, not here. The stop hooks cannot tell either: LXC_TARGET is `stop` for a kill and a power-off.
 */
export type InitExit =
  | { kind: 'signal'; signal: number; name: string }
  | { kind: 'exit'; code: number }
  | { kind: 'unknown' };

/** What the end of a run means for svcd. */
export type StopCause = 'poweroff' | 'reboot' | 'killed' | 'crashed' | 'unknown';

const STARTED = /Started "[^"]*" with pid "(\d+)"/;
const ENDED = /Child <(\d+)> ended on (?:signal [^(]*\((\d+)\)|error \((\d+)\))/;
/** Any INFO line: the log level lets lxc_error_set_and_log through, so a missing line means status 0. */
const INFO_LINE = /^\S+ \S+ \d+\.\d+ INFO /;

/**
 * The end of the run of `pid` (default: the last run the log shows a start of). Pure. `unknown`
 * when the run's start is not in `text`, or when nothing is logged for its end and the log does not
 * carry INFO lines (a level that hides the line of a non-zero exit).
 */
export function parseInitExit(text: string, pid?: number): InitExit {
  const lines = text.split('\n');
  let startAt = -1;
  let runPid = pid;
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = STARTED.exec(lines[i]!);
    if (m && (pid === undefined || Number(m[1]) === pid)) {
      startAt = i;
      runPid = Number(m[1]);
      break;
    }
  }
  if (startAt < 0 || runPid === undefined) return { kind: 'unknown' };
  for (let i = startAt + 1; i < lines.length; i++) {
    const m = ENDED.exec(lines[i]!);
    if (!m || Number(m[1]) !== runPid) continue;
    if (m[2] !== undefined)
      return { kind: 'signal', signal: Number(m[2]), name: /ended on signal ([^(]*)\(/.exec(lines[i]!)?.[1] ?? '' };
    return { kind: 'exit', code: Number(m[3]) };
  }
  // Nothing logged for the end: status 0, if this run logged at INFO at all (its setup lines are INFO).
  let runFrom = 0;
  for (let i = startAt - 1; i >= 0; i--) {
    if (STARTED.test(lines[i]!)) {
      runFrom = i + 1;
      break;
    }
  }
  return lines.slice(runFrom, startAt).some((l) => INFO_LINE.test(l)) ? { kind: 'exit', code: 0 } : { kind: 'unknown' };
}

/**
 * SIGINT (init called reboot(2) to power off or halt) or a clean exit of init: it shut itself down.
 * SIGHUP: it rebooted (LXC starts it again by itself). SIGKILL: killed. Any other signal or exit
 * status: crashed. Pure.
 */
export function stopCauseOf(exit: InitExit): StopCause {
  if (exit.kind === 'unknown') return 'unknown';
  if (exit.kind === 'exit') return exit.code === 0 ? 'poweroff' : 'crashed';
  if (exit.signal === 2) return 'poweroff';
  if (exit.signal === 1) return 'reboot';
  if (exit.signal === 9) return 'killed';
  return 'crashed';
}
