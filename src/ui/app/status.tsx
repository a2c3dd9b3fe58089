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

/** An error's first line, cut short: the table stays readable; the detail page has all of it. */
export function shortError(error: string, max = 160): string {
  const first = error.split('\n')[0] ?? '';
  return first.length > max ? `${first.slice(0, max)}…` : first;
}

/** converged, converging, or failed with the reconciler's error (`full`: all of it, else its start). */
export function ConvergenceCell({ conv, full = false }: { conv: Convergence | undefined; full?: boolean }) {
  if (!conv) return <span class="conv">–</span>;
  const mark = conv.convergence === 'converged' ? '✓' : conv.convergence === 'failed' ? '✗' : '…';
  return (
    <span class={`conv conv-${conv.convergence}`}>
      <span aria-hidden="true">{mark} </span>
      {conv.convergence}
      {conv.convergence === 'failed' && conv.error ? (
        <span class="conv-error" title={full ? undefined : conv.error}>
          : {full ? conv.error : shortError(conv.error)}
          {conv.terminal ? ' (not retried)' : ''}
        </span>
      ) : null}
    </span>
  );
}
