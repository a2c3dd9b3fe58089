import { useCallback, useEffect, useState } from 'preact/hooks';
import { type ApiResult, get } from './api.ts';
import { onEvent } from './events.ts';

/** GET a path, again after every event that `refetchOn` accepts (debounced), and on `reload()`. */
export function useData<T>(path: string, refetchOn?: (ev: { type: string; metadata: unknown }) => boolean) {
  const [result, setResult] = useState<ApiResult<T> | undefined>(undefined);
  const load = useCallback(() => {
    void get<T>(path).then(setResult);
  }, [path]);
  useEffect(() => {
    load();
    if (!refetchOn) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = onEvent((ev) => {
      if (!refetchOn(ev) || timer) return;
      timer = setTimeout(() => {
        timer = undefined;
        load();
      }, 200);
    });
    return () => {
      off();
      if (timer) clearTimeout(timer);
    };
  }, [load]);
  return { result, reload: load };
}
