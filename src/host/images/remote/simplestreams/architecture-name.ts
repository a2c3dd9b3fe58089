/**
 * LXD's architecture names and the other spellings image servers use for them (LXD's shared/osarch:
 * `amd64` → `x86_64`, `arm64` → `aarch64`, `armhf` → `armv7l`...). Simplestreams products carry
 * Debian-style names in `arch`; images and hosts use the LXD name.
 */
const ALIASES: Record<string, string[]> = {
  i686: ['i386', 'i586', '386', 'x86', 'generic_32'],
  x86_64: ['amd64', 'generic_64'],
  armv7l: ['armel', 'armhf', 'arm', 'armhfp', 'armv7a_hardfp', 'armv7', 'armv7a_vfpv3_hardfp'],
  aarch64: ['arm64', 'arm64_generic'],
  ppc: ['powerpc'],
  ppc64: ['powerpc64'],
  ppc64le: ['ppc64el'],
  s390x: [],
  mips: ['mipsel'],
  mips64: ['mips64el'],
  riscv32: [],
  riscv64: [],
};

/** The LXD name of an architecture spelled any known way, undefined when unknown. */
export function architectureName(name: string): string | undefined {
  for (const [canonical, aliases] of Object.entries(ALIASES))
    if (name === canonical || aliases.includes(name)) return canonical;
  return undefined;
}
