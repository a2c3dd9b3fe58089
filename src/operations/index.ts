export * from './create-operations.ts';
export * from './render-operation.ts';
export * from './status.ts';
export * from './websocket-secrets.ts';
