export * from './projects.ts';
export * from './profiles.ts';
export * from './certificates.ts';
export * from './server-config.ts';
export * from './operations.ts';
export * from './reconcile-status.ts';
export * from './storage.ts';
export * from './runtime.ts';
