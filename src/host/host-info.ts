import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { runCommand } from './exec.ts';

/** Facts about the host that do not change while svcd runs: read once at start. */
export interface HostInfo {
  architectures: string[];
  kernel: string;
  kernelArchitecture: string;
  kernelVersion: string;
  osName: string;
  osVersion: string;
  lxcVersion: string;
  /** Version of each storage driver's tooling (dir: the kernel's). */
  storageVersions: Record<string, string>;
}

const PERSONALITIES: Record<string, string[]> = {
  x86_64: ['x86_64', 'i686'],
  aarch64: ['aarch64', 'armv7l'],
  ppc64le: ['ppc64le'],
  s390x: ['s390x'],
  riscv64: ['riscv64'],
};

export async function readHostInfo(): Promise<HostInfo> {
  const machine = os.machine();
  const osRelease = await readFile('/etc/os-release', 'utf8').catch(() => '');
  const field = (k: string) => new RegExp(`^${k}="?([^"\\n]*)"?$`, 'm').exec(osRelease)?.[1] ?? '';
  const [lxcVersion, btrfsVersion] = await Promise.all([
    runCommand('lxc-start', ['--version'], { timeoutMs: 10_000 }).catch(() => ''),
    runCommand('btrfs', ['--version'], { timeoutMs: 10_000 }).catch(() => ''),
  ]);
  return {
    architectures: PERSONALITIES[machine] ?? [machine],
    kernel: os.type(),
    kernelArchitecture: machine,
    kernelVersion: os.release(),
    osName: field('NAME'),
    osVersion: field('VERSION_ID'),
    lxcVersion: lxcVersion.trim(),
    storageVersions: { dir: '1', btrfs: /v?(\d+(\.\d+)+)/.exec(btrfsVersion)?.[1] ?? '' },
  };
}
