export * from './create-image-store.ts';
export * from './detect-compression.ts';
export * from './errors.ts';
export * from './inspect-image.ts';
export * from './pack-image.ts';
export * from './parse-image-metadata.ts';
export * from './unpack-image.ts';
