import path from 'node:path';
import { HostInputError } from '../errors.ts';
import { logDirOf } from '../layout.ts';
import { isLogFileName, listLogFiles, openLogFile, removeLogFile } from '../log-files.ts';
import { openedBytes } from './opened-bytes.ts';

type Named = { project: string; name: string };

/** A container's log directory as log-files.ts takes it: the logs root and the container's entry in it. */
export const logDirParts = (stateDir: string, ct: Named) => {
  const dir = logDirOf(stateDir, ct);
  return { root: path.dirname(dir), sub: path.basename(dir) };
};

const checkName = (file: string) => {
  if (!isLogFileName(file)) throw new HostInputError(`Log file name ${JSON.stringify(file)} is not valid`);
};

/** The files in a container's log directory (lxc.log, console.log, exec output); only plain files directly in it. */
export function createContainerLogsHost({ stateDir }: { stateDir: string }) {
  return {
    list: (ct: Named) => {
      const { root, sub } = logDirParts(stateDir, ct);
      return listLogFiles(root, sub);
    },
    async open(ct: Named, file: string) {
      checkName(file);
      const { root, sub } = logDirParts(stateDir, ct);
      const opened = await openLogFile(root, sub, file);
      return opened && openedBytes([opened]);
    },
    remove(ct: Named, file: string) {
      checkName(file);
      const { root, sub } = logDirParts(stateDir, ct);
      return removeLogFile(root, sub, file);
    },
  };
}
