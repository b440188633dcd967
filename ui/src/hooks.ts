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

export interface Action<A extends unknown[]> {
  readonly run: (...args: A) => Promise<void>;
  readonly busy: boolean;
  readonly error: string | null;
}

/**
 * An action the user starts (a form's submit, a button): `busy` while it runs, the message of
 * its failure in `error` (cleared by the next run; `initialError` shown before any).
 */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<void>, describeError: (err: unknown) => string = errorMessage, initialError: string | null = null): Action<A> {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(initialError);
  const run = async (...args: A) => {
    setBusy(true);
    setError(null);
    try {
      await action(...args);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error };
}
