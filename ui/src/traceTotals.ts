import { useEffect, useRef, useState } from "react";
import { postJson, postLines } from "./api";
import type { Call, CallsUsage } from "./types";

/**
 * What the traces table shows of a call's whole trace below it, which its own row does not
 * hold for every client (an OTLP root has no rolled-up summary): its tokens and cost counted
 * once (`/calls/usage`: each call's own usage, whichever client wrote it) and whether a call
 * below it failed.
 */
export interface TraceTotals {
  /** Tokens of the call and all its descendants over their models; null without usage. */
  readonly tokens: number | null;
  /** Their cost in USD (a model without a price adds 0); null without usage. */
  readonly cost: number | null;
  /** The trace holds more calls than `/calls/usage` reads at once: no figures, rather than wrong ones. */
  readonly tooLarge: boolean;
  /** A trace root: another call of its trace raised. Other calls: not known (false). */
  readonly descendantError: boolean;
  /** The call and its descendants have ended: the figures will not change. */
  readonly final: boolean;
}

/** At most this many calls per request pair (a page of the table). */
const BATCH = 100;
/** Failed calls read at once; a trace already known to hold one is not read again. */
const ERRORS_PER_READ = 1000;

const notNull = (field: string) => ({ $not: [{ $eq: [{ $getField: field }, { $literal: null }] }] });

/** The traces of `roots` in which a call other than a root raised: one read, more only when a read comes back full. */
async function tracesWithFailedCalls(projectId: string, roots: readonly Call[], signal: AbortSignal): Promise<Set<string>> {
  const failed = new Set<string>();
  let traces = [...new Set(roots.map((c) => c.trace_id))];
  while (traces.length > 0) {
    const calls = await postLines<Pick<Call, "id" | "trace_id">>(
      "/calls/stream_query",
      {
        project_id: projectId,
        filter: { trace_ids: traces },
        query: { $expr: { $and: [notNull("exception"), notNull("parent_id")] } },
        columns: ["id", "trace_id", "parent_id"],
        limit: ERRORS_PER_READ,
      },
      signal,
    );
    for (const c of calls) failed.add(c.trace_id);
    if (calls.length < ERRORS_PER_READ) break;
    // A full read: each of its calls belongs to a trace still asked, so the next asks fewer.
    traces = traces.filter((t) => !failed.has(t));
  }
  return failed;
}

/** Totals of `calls` (at most BATCH): one `/calls/usage` and one `/calls/stream_query` of failed calls, in parallel. */
export async function fetchTraceTotals(projectId: string, calls: readonly Call[], signal: AbortSignal): Promise<Map<string, TraceTotals>> {
  const roots = calls.filter((c) => !c.parent_id);
  const [usage, failed] = await Promise.all([
    postJson<CallsUsage>("/calls/usage", { project_id: projectId, call_ids: calls.map((c) => c.id), include_costs: true, skip_large_traces: true }, signal),
    tracesWithFailedCalls(projectId, roots, signal),
  ]);
  const skipped = new Set(usage.skipped_call_ids ?? []);
  const unfinished = new Set(usage.unfinished_call_ids);
  const out = new Map<string, TraceTotals>();
  for (const c of calls) {
    const models = Object.values(usage.call_usage[c.id] ?? {});
    const some = models.length > 0 && !skipped.has(c.id);
    out.set(c.id, {
      tokens: some ? models.reduce((n, u) => n + u.total_tokens, 0) : null,
      cost: some ? models.reduce((n, u) => n + (u.prompt_tokens_total_cost ?? 0) + (u.completion_tokens_total_cost ?? 0), 0) : null,
      tooLarge: skipped.has(c.id),
      descendantError: !c.parent_id && failed.has(c.trace_id),
      final: !!c.ended_at && !unfinished.has(c.id),
    });
  }
  return out;
}

/**
 * Totals of the rows shown, asked a page at a time: for rows not asked yet, and again for
 * rows whose trace was still running (the table's poll brings their newer state).
 */
export function useTraceTotals(projectId: string, rows: readonly Call[]): ReadonlyMap<string, TraceTotals> {
  const [totals, setTotals] = useState<ReadonlyMap<string, TraceTotals>>(new Map());
  const known = useRef(new Map<string, TraceTotals>());
  const asking = useRef(new Set<string>());
  const ctl = useRef<AbortController | null>(null);

  useEffect(() => {
    ctl.current = new AbortController();
    known.current = new Map();
    asking.current = new Set();
    setTotals(new Map());
    return () => ctl.current?.abort();
  }, [projectId]);

  useEffect(() => {
    const signal = ctl.current?.signal;
    if (!signal) return;
    const inFlight = asking.current;
    const wanted = rows.filter((c) => !inFlight.has(c.id) && !known.current.get(c.id)?.final);
    for (let i = 0; i < wanted.length; i += BATCH) {
      const batch = wanted.slice(i, i + BATCH);
      for (const c of batch) inFlight.add(c.id);
      fetchTraceTotals(projectId, batch, signal)
        .then(
          (got) => {
            if (signal.aborted) return;
            for (const [id, t] of got) known.current.set(id, t);
            setTotals(new Map(known.current));
          },
          // Left blank, and asked again with the next rows (the table polls every few seconds).
          () => undefined,
        )
        .finally(() => {
          for (const c of batch) inFlight.delete(c.id);
        });
    }
  }, [projectId, rows]);

  return totals;
}
