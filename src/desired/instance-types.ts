import { ValidationError } from './errors.ts';

/**
 * `instance_type` on container create expands to resource limits. Two forms:
 * - `c<CPUs>-m<GiB>` (LXD's generic form), e.g. `c2-m4` → limits.cpu=2, limits.memory=4GiB;
 *   fractional memory is allowed (`c1-m0.5` → 512MiB);
 * - a name from the table below (the common AWS names; LXD downloads such tables, svcd ships them).
 */
export const INSTANCE_TYPES: Record<string, { cpu: number; memoryMiB: number }> = {
  't2.nano': { cpu: 1, memoryMiB: 512 },
  't2.micro': { cpu: 1, memoryMiB: 1024 },
  't2.small': { cpu: 1, memoryMiB: 2048 },
  't2.medium': { cpu: 2, memoryMiB: 4096 },
  't2.large': { cpu: 2, memoryMiB: 8192 },
  't2.xlarge': { cpu: 4, memoryMiB: 16384 },
  't2.2xlarge': { cpu: 8, memoryMiB: 32768 },
  'm5.large': { cpu: 2, memoryMiB: 8192 },
  'm5.xlarge': { cpu: 4, memoryMiB: 16384 },
  'c5.large': { cpu: 2, memoryMiB: 4096 },
  'c5.xlarge': { cpu: 4, memoryMiB: 8192 },
  'r5.large': { cpu: 2, memoryMiB: 16384 },
};

/** The limits an instance type stands for; unknown or malformed → ValidationError. */
export function expandInstanceType(type: string): { 'limits.cpu': string; 'limits.memory': string } {
  const named = INSTANCE_TYPES[type.replace(/^aws:/, '')];
  let cpu: number;
  let memoryMiB: number;
  if (named) ({ cpu, memoryMiB } = named);
  else {
    const m = /^c(\d{1,4})-m(\d{1,5}(?:\.\d{1,3})?)$/.exec(type);
    if (!m)
      throw new ValidationError(
        `Unknown instance type "${type}" (use c<CPUs>-m<GiB> such as c2-m4, or one of ${Object.keys(INSTANCE_TYPES).join(', ')})`,
      );
    cpu = Number(m[1]);
    memoryMiB = Math.round(Number(m[2]) * 1024);
  }
  if (cpu < 1 || memoryMiB < 1)
    throw new ValidationError(`Instance type "${type}" must have at least one CPU and some memory`);
  return {
    'limits.cpu': String(cpu),
    'limits.memory': memoryMiB % 1024 === 0 ? `${memoryMiB / 1024}GiB` : `${memoryMiB}MiB`,
  };
}
