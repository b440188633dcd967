import { useEffect, useRef, useState, type DependencyList } from "react";
import { errorMessage, isAbort } from "./api";

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: string | null;
  readonly loading: boolean;
  readonly reload: () => void;
  /** Changes the data shown without loading (fresher rows a poll brought). */
  readonly update: (change: (data: T | undefined) => T) => void;
}

export interface LoadOptions<T> {
  /**
   * A load adds to the data shown instead of replacing it (a list's next page): what it
   * brings is folded into what is shown, and a failed load leaves what is shown.
   */
  readonly accumulate?: (shown: T | undefined, loaded: T) => T;
}

/**
 * Runs `load` when `deps` change (aborting the previous run); its result, error or progress.
 * The data shown stays while the next load runs.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: DependencyList, { accumulate }: LoadOptions<T> = {}): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: string | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true, error: null }));
    load(ctl.signal).then(
      (data) => {
        // A run already replaced (its answer came before the abort could stop it) shows nothing.
        if (!ctl.signal.aborted) setState((s) => ({ data: accumulate ? accumulate(s.data, data) : data, error: null, loading: false }));
      },
      (err: unknown) => {
        if (!ctl.signal.aborted && !isAbort(err)) setState((s) => ({ data: accumulate ? s.data : undefined, error: errorMessage(err), loading: false }));
      },
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1), update: (change) => setState((s) => ({ ...s, data: change(s.data) })) };
}

/** Where a page of a list starts, and how many rows it asks. */
export interface PageWindow {
  readonly offset: number;
  readonly limit: number;
}

/** A page as the API answers it: its rows, beside whatever else the answer holds (a total, warnings). */
export interface RowsPage {
  readonly rows: readonly unknown[];
}
type Row<P extends RowsPage> = P["rows"][number];

export interface PagedOptions<R> {
  /** Rows per page. */
  readonly size: number;
  /**
   * Pages shown one after another (a "show more" button, or a table loading as it scrolls)
   * rather than one at a time (previous and next). A new query starts with no rows.
   */
  readonly more?: boolean;
  /** ("more") The name of a row: a row shown already is not added again. */
  readonly key?: (row: R) => string;
  /** ("more") The first page is asked again every this many ms and put in front: new rows appear without reloading. */
  readonly refreshMs?: number;
}

export interface Paged<P extends RowsPage> {
  /** The rows shown: the page, or ("more") the pages so far of this query. */
  readonly rows: readonly Row<P>[];
  /** The last page's answer as the API gave it. */
  readonly page: P | undefined;
  /** The place in the list of the first row shown. */
  readonly from: number;
  readonly size: number;
  readonly more: boolean;
  /** The last page came back full: a next one may hold rows. */
  readonly hasMore: boolean;
  readonly hasPrevious: boolean;
  readonly loading: boolean;
  readonly error: string | null;
  /** The next page (with "more": added to the rows shown, unless one is loading). */
  readonly next: () => void;
  readonly previous: () => void;
}

/** Rows shown of a query (`deps`), from the place `offset` of its list. */
interface Shown<P extends RowsPage> {
  readonly deps: DependencyList;
  readonly offset: number;
  readonly rows: readonly Row<P>[];
  readonly page: P;
  readonly full: boolean;
}

const sameDeps = (a: DependencyList, b: DependencyList): boolean => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
const NO_ROWS: readonly never[] = [];

/** A page after the ones shown of the same query, its rows not shown yet added after them. */
function appendPage<P extends RowsPage>(shown: Shown<P> | undefined, loaded: Shown<P>, key: ((row: Row<P>) => string) | undefined): Shown<P> {
  if (!shown || loaded.offset === 0 || !sameDeps(shown.deps, loaded.deps)) return loaded;
  const seen = new Set(key ? shown.rows.map(key) : []);
  return { ...loaded, offset: shown.offset, rows: [...shown.rows, ...(key ? loaded.rows.filter((r) => !seen.has(key(r))) : loaded.rows)] };
}

/** A fresh first page (of `size` rows asked) in place of the first page shown; rows after it named in it are left out. */
function refreshFront<P extends RowsPage>(shown: Shown<P> | undefined, fresh: Shown<P>, size: number, key: ((row: Row<P>) => string) | undefined): Shown<P> {
  if (!shown || !sameDeps(shown.deps, fresh.deps)) return fresh;
  const names = new Set(key ? fresh.rows.map(key) : []);
  const rest = shown.rows.slice(size);
  return { ...shown, rows: [...fresh.rows, ...(key ? rest.filter((r) => !names.has(key(r))) : rest)] };
}

/**
 * A list read a page at a time (`loadPage` with the page's offset and limit), again from
 * its first page when `deps` (the query) change: one page shown at a time, or with `more`
 * the pages one after another.
 */
export function usePaged<P extends RowsPage>(loadPage: (window: PageWindow, signal: AbortSignal) => Promise<P>, deps: DependencyList, options: PagedOptions<Row<P>>): Paged<P> {
  const { size, more = false, key, refreshMs } = options;
  // The offset asked, for the query it was asked of: a new query starts at 0 (set while rendering, so no load asks the old offset).
  let [asked, setAsked] = useState<{ deps: DependencyList; offset: number }>({ deps, offset: 0 });
  if (!sameDeps(asked.deps, deps)) {
    asked = { deps, offset: 0 };
    setAsked(asked);
  }
  const { offset } = asked;
  const pageAt = async (at: number, signal: AbortSignal): Promise<Shown<P>> => {
    const page = await loadPage({ offset: at, limit: size }, signal);
    return { deps: asked.deps, offset: at, rows: page.rows, page, full: page.rows.length >= size };
  };
  const loaded = useLoad((signal) => pageAt(offset, signal), [...deps, offset], more ? { accumulate: (shown, page) => appendPage(shown, page, key) } : {});
  useRefresh(more ? refreshMs : undefined, loaded, (signal) => pageAt(0, signal).then((fresh) => (shown: Shown<P> | undefined) => refreshFront(shown, fresh, size, key)), deps);

  const shown = loaded.data;
  const current = shown !== undefined && sameDeps(shown.deps, deps);
  // "more": an earlier query's rows are not this one's; one at a time: the page stays until the next one comes.
  const visible = more && !current ? undefined : shown;
  const rows = visible?.rows ?? NO_ROWS;
  const hasMore = visible?.full ?? false;
  return {
    rows,
    page: visible?.page,
    from: visible?.offset ?? 0,
    size,
    more,
    hasMore,
    hasPrevious: !more && offset > 0,
    loading: loaded.loading,
    error: loaded.error,
    next: () => {
      if (!more) setAsked({ deps: asked.deps, offset: offset + size });
      // From the count of rows shown, as the traces table always asked; never the offset asked already (that would load nothing, and ask again at once).
      else if (!loaded.loading && hasMore && rows.length > offset) setAsked({ deps: asked.deps, offset: rows.length });
    },
    previous: () => setAsked({ deps: asked.deps, offset: Math.max(0, offset - size) }),
  };
}

/**
 * Every `everyMs` while the tab is shown and no load runs, `ask` again and its change
 * applied to the data shown; a failed ask is left (the next one may pass).
 */
function useRefresh<T>(everyMs: number | undefined, loaded: Loaded<T>, ask: (signal: AbortSignal) => Promise<(data: T | undefined) => T>, deps: DependencyList): void {
  const loading = useRef(loaded.loading);
  loading.current = loaded.loading;
  const { update } = loaded;
  useEffect(() => {
    if (!everyMs) return;
    const ctl = new AbortController();
    const timer = setInterval(() => {
      if (loading.current || document.hidden) return;
      ask(ctl.signal).then((change) => !ctl.signal.aborted && update(change), () => undefined);
    }, everyMs);
    return () => {
      clearInterval(timer);
      ctl.abort();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, everyMs]);
}

export interface Action<A extends unknown[]> {
  /** Resolves true when the action succeeded. */
  readonly run: (...args: A) => Promise<boolean>;
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
      return true;
    } catch (err) {
      setError(describeError(err));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error };
}
