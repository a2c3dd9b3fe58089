import { spawnInteractiveCommand, type InteractiveCommand } from '../exec.ts';
import { lxcArgs, type LxcRef } from './lxc-args.ts';

/**
 * Attach to a running container's console (`lxc-console -t 0`) with piped standard input and
 * output rather than a terminal: lxc-console then relays bytes unchanged and does not switch a
 * terminal to raw mode (which would flush input typed before it was ready). A terminal size is
 * of no use here: liblxc 5.0 sets a client's size on its own proxy terminal only, never on the
 * container's /dev/console. LXC lets one client attach at a time; a second one, or a stopped
 * container, makes lxc-console exit at once with an error on its standard error. `logFile`: the
 * container's `lxc.log`, where it then logs only errors (3 INFO lines per session otherwise).
 */
export function attachConsole(ref: LxcRef, logFile?: string): InteractiveCommand {
  return spawnInteractiveCommand('lxc-console', lxcArgs.console(ref, logFile));
}
