import path from 'node:path';
import { HostInputError } from '../errors.ts';
import { logDirOf, lxcPathOf } from '../layout.ts';
import { openLogFile, removeLogFile, truncateLogFile } from '../log-files.ts';
import { attachConsole } from '../lxc/console.ts';
import { containerState } from '../lxc/lifecycle.ts';
import { logDirParts } from './container-logs-host.ts';
import { openedBytes } from './opened-bytes.ts';

/** LXC's console log (lxc.console.logfile) and the part it rotated away when the log was full. */
const CONSOLE_LOG = 'console.log';
const ROTATED_CONSOLE_LOG = 'console.log.1';
const CONSOLE_LOG_PARTS = [ROTATED_CONSOLE_LOG, CONSOLE_LOG];

type Named = { project: string; name: string };

/**
 * A container's console: its log is LXC's `lxc.console.logfile` (rotated once at 128 KiB, so 128 to
 * 256 KiB of the latest output are kept), emptied at each start; a client attaches to the live console.
 */
export function createContainerConsoleHost({ stateDir }: { stateDir: string }) {
  return {
    async openLog(ct: Named) {
      const { root, sub } = logDirParts(stateDir, ct);
      // The rotated part (older output) first, then the current file; absent parts (never started) are empty.
      return openedBytes(
        (await Promise.all(CONSOLE_LOG_PARTS.map((f) => openLogFile(root, sub, f)))).filter((p) => p !== undefined),
      );
    },
    async clearLog(ct: Named) {
      const { root, sub } = logDirParts(stateDir, ct);
      await removeLogFile(root, sub, ROTATED_CONSOLE_LOG);
      await truncateLogFile(root, sub, CONSOLE_LOG);
    },
    async prepare(ct: Named & { id: string }) {
      const ref = { name: ct.id, lxcPath: lxcPathOf(stateDir) };
      const { state } = await containerState(ref);
      if (state !== 'RUNNING' && state !== 'FROZEN') throw new HostInputError(`Container "${ct.name}" is not running`);
      // A terminal size cannot be applied (see lxc/console.ts).
      return () => attachConsole(ref, path.join(logDirOf(stateDir, ct), 'lxc.log'));
    },
  };
}
