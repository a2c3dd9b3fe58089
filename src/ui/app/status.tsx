import type { Convergence } from './containers-store.ts';

const STATUS_MARK: Record<string, string> = { Running: '▶', Stopped: '■', Frozen: '❄', Error: '✗' };

/** A container status: the API's word, with a mark and a colour that only repeat it. */
export function Status({ status }: { status: string | undefined }) {
  const s = status ?? 'Unknown';
  return (
    <span class={`status status-${s.toLowerCase()}`}>
      <span aria-hidden="true">{STATUS_MARK[s] ?? '?'} </span>
      {s}
    </span>
  );
}

/** converged, converging, or failed with the reconciler's error. */
export function ConvergenceCell({ conv }: { conv: Convergence | undefined }) {
  if (!conv) return <span class="conv">–</span>;
  const mark = conv.convergence === 'converged' ? '✓' : conv.convergence === 'failed' ? '✗' : '…';
  return (
    <span class={`conv conv-${conv.convergence}`}>
      <span aria-hidden="true">{mark} </span>
      {conv.convergence}
      {conv.convergence === 'failed' && conv.error ? (
        <span class="conv-error">
          : {conv.error}
          {conv.terminal ? ' (not retried)' : ''}
        </span>
      ) : null}
    </span>
  );
}
