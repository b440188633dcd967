import { useEffect, useState, type DependencyList } from "react";
import { errorMessage, isAbort } from "./api";

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: string | null;
  readonly loading: boolean;
  readonly reload: () => void;
}

/** Runs `load` when `deps` change (aborting the previous run); its result, error or progress. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: DependencyList): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: string | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true, error: null }));
    load(ctl.signal).then(
      (data) => setState({ data, error: null, loading: false }),
      (err: unknown) => {
        if (!isAbort(err)) setState({ data: undefined, error: errorMessage(err), loading: false });
      },
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}
