export { parseCpuinfo } from './parse-cpuinfo.ts';
export type { CpuinfoProcessor, ParsedCpuinfo } from './parse-cpuinfo.ts';
export { parseMeminfo } from './parse-meminfo.ts';
export type { Meminfo } from './parse-meminfo.ts';
export { parseCpuList } from './parse-cpu-list.ts';
export { computeCpu, computeMemory, computeResources } from './compute-resources.ts';
export type {
  CpuInputs,
  CpuResources,
  CpuSocket,
  CpuSysFacts,
  MemoryResources,
  ResourceInputs,
  ServerResources,
} from './compute-resources.ts';
export { readCpuResources, readMemoryResources, readResources } from './read-resources.ts';
export type { ReadResourcesOptions } from './read-resources.ts';
export { createResourcesCache } from './cache.ts';
export type { ResourcesCache, ResourcesCacheOptions } from './cache.ts';
