/**
 * Pure parser for /proc/cpuinfo.
 *
 * /proc/cpuinfo is a sequence of blank-line separated blocks of "key : value"
 * lines. On x86, ppc64 and aarch64 every logical CPU gets a block starting with
 * "processor : N"; some architectures add blocks without a processor line
 * (aarch64/arm "Hardware", "Revision", "Model"; ppc64 "timebase", "platform";
 * s390x puts everything global in a leading block). Those are collected into
 * `global` and used as a fallback for every processor.
 */

/** One logical CPU as described by /proc/cpuinfo. */
export interface CpuinfoProcessor {
  /** Logical CPU number ("processor", or "cpu number" on s390x). */
  processor: number;
  /** Vendor: vendor_id (x86, s390x) or the decoded "CPU implementer" (arm); "" when unknown. */
  vendor: string;
  /** Model name: "model name", "cpu" (ppc64), "Processor" (old arm), the ARM part name, or "Hardware"; "" when unknown. */
  name: string;
  /** Current clock in MHz from "cpu MHz" (x86), "clock" (ppc64) or "cpu MHz dynamic" (s390x); undefined when absent. */
  mhz: number | undefined;
  /** "physical id" (x86 socket), undefined when absent. */
  physicalId: number | undefined;
  /** "core id" (x86, unique within the socket), undefined when absent. */
  coreId: number | undefined;
  /** Every key/value pair of the processor's own block, as written. */
  fields: Readonly<Record<string, string>>;
}

export interface ParsedCpuinfo {
  /** Per-processor records, in file order. */
  processors: CpuinfoProcessor[];
  /** Fields of blocks that do not describe a single processor (later blocks win). */
  global: Readonly<Record<string, string>>;
}

/** ARM "CPU implementer" codes (MIDR_EL1 bits 31:24), as listed by util-linux lscpu. */
const ARM_IMPLEMENTERS: ReadonlyMap<number, string> = new Map([
  [0x41, 'ARM'],
  [0x42, 'Broadcom'],
  [0x43, 'Cavium'],
  [0x44, 'DEC'],
  [0x46, 'Fujitsu'],
  [0x48, 'HiSilicon'],
  [0x49, 'Infineon'],
  [0x4d, 'Motorola/Freescale'],
  [0x4e, 'NVIDIA'],
  [0x50, 'APM'],
  [0x51, 'Qualcomm'],
  [0x53, 'Samsung'],
  [0x56, 'Marvell'],
  [0x61, 'Apple'],
  [0x66, 'Faraday'],
  [0x69, 'Intel'],
  [0x6d, 'Microsoft'],
  [0x70, 'Phytium'],
  [0xc0, 'Ampere'],
]);

/** Common "CPU part" codes of implementer 0x41 (ARM Ltd). */
const ARM_LTD_PARTS: ReadonlyMap<number, string> = new Map([
  [0xd03, 'Cortex-A53'],
  [0xd04, 'Cortex-A35'],
  [0xd05, 'Cortex-A55'],
  [0xd07, 'Cortex-A57'],
  [0xd08, 'Cortex-A72'],
  [0xd09, 'Cortex-A73'],
  [0xd0a, 'Cortex-A75'],
  [0xd0b, 'Cortex-A76'],
  [0xd0c, 'Neoverse-N1'],
  [0xd0d, 'Cortex-A77'],
  [0xd40, 'Neoverse-V1'],
  [0xd41, 'Cortex-A78'],
  [0xd44, 'Cortex-X1'],
  [0xd46, 'Cortex-A510'],
  [0xd47, 'Cortex-A710'],
  [0xd48, 'Cortex-X2'],
  [0xd49, 'Neoverse-N2'],
  [0xd4f, 'Neoverse-V2'],
  [0xd80, 'Cortex-A520'],
  [0xd81, 'Cortex-A720'],
  [0xd82, 'Cortex-X4'],
  [0xd84, 'Neoverse-V3'],
  [0xd8e, 'Neoverse-N3'],
]);

function parseIntField(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^-?\d+$/.test(v)) return Number(v);
  if (/^0x[0-9a-f]+$/i.test(v)) return Number.parseInt(v.slice(2), 16);
  return undefined;
}

/** Leading decimal number of a value such as "2596.140" or "2300.000000MHz". */
function parseMhz(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)/.exec(value);
  return match ? Number(match[1]) : undefined;
}

function firstNonEmpty(...values: Array<string | undefined>): string {
  for (const v of values) {
    if (v !== undefined && v.trim() !== '') return v.trim();
  }
  return '';
}

function armVendor(implementer: string | undefined): string | undefined {
  const code = parseIntField(implementer);
  if (code === undefined) return implementer;
  return ARM_IMPLEMENTERS.get(code) ?? implementer;
}

function armPartName(implementer: string | undefined, part: string | undefined): string | undefined {
  if (parseIntField(implementer) !== 0x41) return undefined;
  const code = parseIntField(part);
  return code === undefined ? undefined : ARM_LTD_PARTS.get(code);
}

/** Split into blocks of key/value maps. Lines without a colon are ignored. */
function splitBlocks(text: string): Array<Map<string, string>> {
  const blocks: Array<Map<string, string>> = [];
  let current = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (current.size > 0) blocks.push(current);
      current = new Map();
      continue;
    }
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    if (key === '') continue;
    current.set(key, line.slice(colon + 1).trim());
  }
  if (current.size > 0) blocks.push(current);
  return blocks;
}

function processorIndex(block: Map<string, string>): number | undefined {
  const raw = block.get('processor') ?? block.get('cpu number');
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  return Number(raw);
}

/** Parse the text of /proc/cpuinfo into per-processor records. */
export function parseCpuinfo(text: string): ParsedCpuinfo {
  const blocks = splitBlocks(text);
  const global: Record<string, string> = {};
  const own: Array<{ index: number; block: Map<string, string> }> = [];

  for (const block of blocks) {
    const index = processorIndex(block);
    if (index === undefined) {
      for (const [k, v] of block) global[k] = v;
    } else {
      own.push({ index, block });
    }
  }

  const lookup = (block: Map<string, string>, key: string): string | undefined => block.get(key) ?? global[key];

  const processors: CpuinfoProcessor[] = own.map(({ index, block }) => {
    const implementer = lookup(block, 'CPU implementer');
    return {
      processor: index,
      vendor: firstNonEmpty(lookup(block, 'vendor_id'), lookup(block, 'vendor'), armVendor(implementer)),
      name: firstNonEmpty(
        lookup(block, 'model name'),
        lookup(block, 'cpu'),
        lookup(block, 'Processor'),
        armPartName(implementer, lookup(block, 'CPU part')),
      ),
      mhz: parseMhz(block.get('cpu MHz') ?? block.get('clock') ?? block.get('cpu MHz dynamic')),
      physicalId: parseIntField(block.get('physical id')),
      coreId: parseIntField(block.get('core id')),
      fields: Object.fromEntries(block),
    };
  });

  // Old 32-bit ARM kernels print "Processor : <model>" only once, in the first
  // block; let processors without their own vendor/name inherit the first known.
  // Only then fall back to the board/SoC ("Hardware") as the name.
  const fallbackVendor = processors.find((p) => p.vendor !== '')?.vendor ?? '';
  const fallbackName = processors.find((p) => p.name !== '')?.name ?? '';
  own.forEach(({ block }, i) => {
    const p = processors[i]!;
    if (p.vendor === '') p.vendor = fallbackVendor;
    if (p.name === '') p.name = fallbackName || firstNonEmpty(lookup(block, 'Hardware'));
  });

  return { processors, global };
}
