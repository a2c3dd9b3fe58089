import { constants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { HostInputError } from '../errors.ts';
import { logDirOf, lxcPathOf } from '../layout.ts';
import { attachPiped, attachPty, mapsHostRoot, type AttachSpec } from '../lxc/attach.ts';
import { containerState } from '../lxc/lifecycle.ts';

type Target = { id: string; project: string; name: string };

export interface ExecCommand {
  command: string[];
  env: Record<string, string>;
  uid?: number | undefined;
  gid?: number | undefined;
  cwd: string;
}

/** Commands in running containers through lxc-attach (in the spawn helper). */
export function createContainerExecHost({ stateDir }: { stateDir: string }) {
  const lxcPath = lxcPathOf(stateDir);

  /** 400 unless LXC runs the container (asked of the host, not the runtime view, which may lag a start); its init pid. */
  async function requireRunning(ct: Target): Promise<number | undefined> {
    const { state, pid } = await containerState({ name: ct.id, lxcPath });
    if (state === 'RUNNING') return pid;
    if (state === 'FROZEN' || state === 'FREEZING')
      throw new HostInputError(`Container "${ct.name}" is frozen: unfreeze it to run commands in it`);
    throw new HostInputError(`Container "${ct.name}" is not running: start it to run commands in it`);
  }

  return {
    async prepare(ct: Target, cmd: ExecCommand) {
      const pid = await requireRunning(ct);
      // lxc-attach's self-copy only guards containers whose root is host root: skipped for the others.
      // The spawn helper keeps its private copy of lxc-attach in the lxcpath (attach.ts `copyIn`).
      const fast = pid !== undefined && !mapsHostRoot(pid);
      const dir = logDirOf(stateDir, ct);
      const spec: AttachSpec = {
        name: ct.id,
        lxcPath,
        command: cmd.command,
        env: cmd.env,
        ...(cmd.uid !== undefined ? { uid: cmd.uid } : {}),
        ...(cmd.gid !== undefined ? { gid: cmd.gid } : {}),
        cwd: cmd.cwd,
        logFile: path.join(dir, 'lxc.log'),
        ...(fast ? { copyIn: lxcPath } : {}),
      };
      return {
        pty: (size: { cols: number; rows: number }) => attachPty(spec, size),
        piped: () => attachPiped(spec, { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' }),
        async detached(record: string | undefined) {
          const files: FileHandle[] = [];
          try {
            if (record) {
              await mkdir(dir, { recursive: true, mode: 0o700 });
              // New files only, never through a symlink.
              for (const suffix of ['stdout', 'stderr'])
                files.push(
                  await open(
                    path.join(dir, `${record}.${suffix}`),
                    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
                    0o600,
                  ),
                );
            }
            // Created here (new, not through a symlink); the spawn helper appends to them (O_NOFOLLOW too).
            for (const f of files.splice(0)) await f.close();
            const target = (suffix: string) =>
              record ? { appendTo: path.join(dir, `${record}.${suffix}`) } : ('ignore' as const);
            return await attachPiped(spec, { stdin: 'ignore', stdout: target('stdout'), stderr: target('stderr') });
          } finally {
            for (const f of files) await f.close().catch(() => {});
          }
        },
      };
    },
  };
}
