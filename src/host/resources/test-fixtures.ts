/**
 * Fixture texts for the resources tests, modelled on real hosts.
 */

const XEON_FLAGS =
  'fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 cdp_l3 invpcid_single pti intel_ppin ssbd ibrs ibpb stibp tpr_shadow vnmi flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm cqm rdt_a rdseed adx smap intel_pt xsaveopt cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm arat pln pts md_clear flush_l1d';

/** [processor, physical id, core id, apicid, cpu MHz] — Linux numbers the first thread of every core first, then the hyperthread siblings. */
const XEON_LAYOUT: ReadonlyArray<readonly [number, number, number, number, string]> = [
  [0, 0, 0, 0, '1200.042'],
  [1, 0, 1, 2, '2100.000'],
  [2, 1, 0, 32, '2095.500'],
  [3, 1, 1, 34, '2100.000'],
  [4, 0, 0, 1, '1800.112'],
  [5, 0, 1, 3, '1500.000'],
  [6, 1, 0, 33, '2099.900'],
  [7, 1, 1, 35, '1204.600'],
];

/**
 * /proc/cpuinfo of a two-socket Xeon E5-2620 v4 box trimmed to 2 cores per
 * socket, hyperthreading on: 8 processors, physical id 0/1, core id 0/1 in each.
 */
export const X86_TWO_SOCKET_CPUINFO = `${XEON_LAYOUT.map(
  ([processor, physicalId, coreId, apicid, mhz]) => `processor\t: ${processor}
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 79
model name\t: Intel(R) Xeon(R) CPU E5-2620 v4 @ 2.10GHz
stepping\t: 1
microcode\t: 0xb000040
cpu MHz\t\t: ${mhz}
cache size\t: 20480 KB
physical id\t: ${physicalId}
siblings\t: 4
core id\t\t: ${coreId}
cpu cores\t: 2
apicid\t\t: ${apicid}
initial apicid\t: ${apicid}
fpu\t\t: yes
fpu_exception\t: yes
cpuid level\t: 20
wp\t\t: yes
flags\t\t: ${XEON_FLAGS}
vmx flags\t: vnmi preemption_timer posted_intr invvpid ept_x_only ept_ad ept_1gb flexpriority apicv tsc_offset vtpr mtf vapic ept vpid unrestricted_guest vapic_reg vid ple shadow_vmcs pml
bugs\t\t: cpu_meltdown spectre_v1 spectre_v2 spec_store_bypass l1tf mds swapgs taa itlb_multihit mmio_stale_data
bogomips\t: 4190.14
clflush size\t: 64
cache_alignment\t: 64
address sizes\t: 46 bits physical, 48 bits virtual
power management:
`,
).join('\n')}\n`;

/** X86_TWO_SOCKET_CPUINFO without the given processors (offline CPUs are not listed by the kernel). */
export function x86CpuinfoWithout(...offline: number[]): string {
  return `${X86_TWO_SOCKET_CPUINFO.split('\n\n')
    .filter((block) => block.trim() !== '')
    .filter((block) => !offline.some((id) => block.startsWith(`processor\t: ${id}\n`)))
    .join('\n\n')}\n\n`;
}

/** /proc/cpuinfo of a Raspberry Pi 4 running a 64-bit kernel (Cortex-A72, no "model name", no "cpu MHz"). */
export const AARCH64_RPI4_CPUINFO = `processor\t: 0
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3

processor\t: 1
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3

processor\t: 2
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3

processor\t: 3
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3

Hardware\t: BCM2835
Revision\t: c03111
Serial\t\t: 10000000a1b2c3d4
Model\t\t: Raspberry Pi 4 Model B Rev 1.1
`;

/** /proc/meminfo of a 5.15 kernel (has MemAvailable). */
export const MEMINFO_MODERN = `MemTotal:       16303480 kB
MemFree:         9241716 kB
MemAvailable:   11843220 kB
Buffers:          310488 kB
Cached:          2511640 kB
SwapCached:            0 kB
Active:          1822628 kB
Inactive:        4378256 kB
Active(anon):       5196 kB
Inactive(anon):  3401004 kB
Active(file):    1817432 kB
Inactive(file):   977252 kB
Unevictable:       73640 kB
Mlocked:              16 kB
SwapTotal:       2097148 kB
SwapFree:        2097148 kB
Dirty:               588 kB
Writeback:             0 kB
AnonPages:       3451924 kB
Mapped:           902016 kB
Shmem:             28464 kB
KReclaimable:     251560 kB
Slab:             421644 kB
SReclaimable:     251560 kB
SUnreclaim:       170084 kB
KernelStack:       17728 kB
PageTables:        42036 kB
NFS_Unstable:          0 kB
Bounce:                0 kB
WritebackTmp:          0 kB
CommitLimit:    10248888 kB
Committed_AS:   11585060 kB
VmallocTotal:   34359738367 kB
VmallocUsed:       58292 kB
VmallocChunk:          0 kB
Percpu:             7296 kB
HardwareCorrupted:     0 kB
AnonHugePages:         0 kB
ShmemHugePages:        0 kB
ShmemPmdMapped:        0 kB
FileHugePages:         0 kB
FilePmdMapped:         0 kB
HugePages_Total:       0
HugePages_Free:        0
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       2048 kB
Hugetlb:               0 kB
DirectMap4k:      443580 kB
DirectMap2M:    10842112 kB
DirectMap1G:     5242880 kB
`;

/** /proc/meminfo of a 3.13 kernel (before MemAvailable was added in 3.14). */
export const MEMINFO_NO_AVAILABLE = `MemTotal:        2049988 kB
MemFree:          123456 kB
Buffers:           65432 kB
Cached:           789012 kB
SwapCached:         1024 kB
Active:          1012344 kB
Inactive:         612804 kB
Active(anon):     580112 kB
Inactive(anon):   210556 kB
Active(file):     432232 kB
Inactive(file):   402248 kB
Unevictable:           0 kB
Mlocked:               0 kB
SwapTotal:       1048572 kB
SwapFree:        1030140 kB
Dirty:                88 kB
Writeback:             0 kB
AnonPages:        770704 kB
Mapped:           101732 kB
Shmem:             19964 kB
Slab:              87440 kB
SReclaimable:      62108 kB
SUnreclaim:        25332 kB
KernelStack:        2760 kB
PageTables:        23128 kB
NFS_Unstable:          0 kB
Bounce:                0 kB
WritebackTmp:          0 kB
CommitLimit:     2073564 kB
Committed_AS:    2839484 kB
VmallocTotal:   34359738367 kB
VmallocUsed:      541412 kB
VmallocChunk:   34359190524 kB
HardwareCorrupted:     0 kB
AnonHugePages:    176128 kB
HugePages_Total:       0
HugePages_Free:        0
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       2048 kB
DirectMap4k:       59392 kB
DirectMap2M:     2037760 kB
`;
