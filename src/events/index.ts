export * from './event-bus.ts';
export * from './lifecycle.ts';
