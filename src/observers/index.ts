export { createDriftReporter, type DriftReporter, type DriftReporterDeps } from './drift.ts';
export { createObserverRunner, type ObserverRunner, type ObserverRunnerDeps } from './observer-runner.ts';
export { createPollLoop, type PollLoopDeps } from './poll-loop.ts';
export { createStreamLoop, type StreamLoopDeps } from './stream-loop.ts';
export type { Observer, ObserverLoop, PollObserver, StreamObserver } from './types.ts';
