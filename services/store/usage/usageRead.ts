import type { CallsFilter } from "../../contract/calls.js";
import type { Query } from "../../contract/queryExpr.js";
import { ClientError } from "../../errors.js";
import { whereClause } from "../calls/callsQuery.js";
import { andRetainedSince, type ProjectRetention } from "../projects/retention.js";
import type { ClickHouseStore } from "../clickhouse.js";
import type { CostsRepository } from "../costs/costsRepository.js";
import type { PriceBook } from "../costs/pricing.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { OWN_FIGURES, ownUsageSql } from "./ownUsage.js";
import { rollUpUsage, type CallUsage, type OwnUsage, type UsageCall, type UsageRollup } from "./usageRollup.js";

/** At most this many trace ids go into one read (the SQL text stays well under max_query_size). */
const TRACES_PER_READ = 1000;

export interface UsageRequest {
  readonly projectId: string;
  readonly includeCosts: boolean;
  /** The most calls read at once: a batch of whole traces. */
  readonly limit: number;
}

/** A trace holds more calls than the request's limit: the client must raise the limit (413). */
export class UsageLimitError extends ClientError {
  constructor(traceId: string, calls: number, limit: number) {
    super(413, `trace ${traceId} holds ${calls} calls, more than the limit of ${limit}; raise limit to read it`);
  }
}

interface TraceSpan {
  trace_id: string;
  lo: string | number;
  hi: string | number;
  calls: string | number;
}

interface CallRowJson {
  id: string;
  parent_id: string | null;
  ended_at: string | number | null;
}

type OwnUsageRowJson = Record<"id" | "model", string> & Record<"started_at" | (typeof OWN_FIGURES)[number], string | number>;

interface Batch {
  readonly projectId: string;
  readonly lo: number;
  readonly hi: number;
  readonly traceIds: readonly string[];
}

/**
 * Reads for `/calls/usage` and `/trace/usage`.
 *
 * Plan: (1) the traces that hold the wanted calls, with their started_at span and size,
 * from `call_index` (keyed by project and id: the trace filter reads the project's index,
 * a few columns); (2) per batch of whole traces of at most `limit` calls together, the
 * calls of those traces from `calls FINAL`, narrowed by the batch's started_at span (the
 * sort key) and the trace ids, deleted calls left out, and beside it, in parallel, their
 * own usage (ownUsage.ts, reading the same rows); (3) the roll-up in memory
 * (usageRollup.ts). A trace larger than `limit` is refused (413) rather than cut, or, for
 * `/calls/usage` with skip_large_traces, left out and its requested calls listed as skipped.
 */
export class UsageRepository {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly costs: CostsRepository,
    private readonly retention: ProjectRetention,
  ) {}

  async callsUsage(req: UsageRequest & { readonly callIds: readonly string[]; readonly skipLargeTraces?: boolean }): Promise<UsageRollup> {
    const ids = [...new Set(req.callIds)];
    const skipping = req.skipLargeTraces === true;
    if (ids.length === 0) return { call_usage: {}, unfinished_call_ids: [], ...(skipping ? { skipped_call_ids: [] } : {}) };
    const pb = new ParamBuilder();
    const project = pb.str(req.projectId);
    // A call past the project's retention has no usage (its id answers empty).
    const retained = andRetainedSince("started_at", await this.retention.cutoff(req.projectId), pb);
    const traces = `(SELECT trace_id FROM call_index WHERE project_id = ${project} AND id IN ${pb.inStrings(ids)}${retained})`;
    let spans = await this.traceSpans({ sql: spansSql(project, traces), params: pb.params });
    const large = skipping ? spans.filter((s) => s.calls > req.limit).map((s) => s.traceId) : [];
    if (large.length > 0) spans = spans.filter((s) => s.calls <= req.limit);
    const skipped = await this.callsOfTraces(req.projectId, ids, large);
    const result = await this.rollUp(req, spans, ids);
    const empty = Object.fromEntries(ids.filter((id) => !skipped.has(id)).map((id) => [id, {} as CallUsage]));
    return {
      call_usage: { ...empty, ...result.call_usage },
      unfinished_call_ids: result.unfinished_call_ids,
      ...(skipping ? { skipped_call_ids: [...skipped].sort() } : {}),
    };
  }

  /** Which of `ids` belong to one of `traceIds`, from the index. */
  private async callsOfTraces(projectId: string, ids: readonly string[], traceIds: readonly string[]): Promise<Set<string>> {
    if (traceIds.length === 0) return new Set();
    const pb = new ParamBuilder();
    const rows = await this.store.rows<{ id: string }>("usage_skipped_calls", {
      sql: `SELECT DISTINCT id FROM call_index WHERE project_id = ${pb.str(projectId)} AND id IN ${pb.inStrings(ids)} AND trace_id IN ${pb.inStrings(traceIds)}`,
      params: pb.params,
    });
    return new Set(rows.map((r) => r.id));
  }

  async traceUsage(req: UsageRequest & { readonly filter?: CallsFilter | null; readonly query?: Query | null }): Promise<UsageRollup> {
    const spec = { projectId: req.projectId, filter: req.filter, query: req.query, retainedFrom: await this.retention.cutoff(req.projectId) };
    const pb = new ParamBuilder();
    const matched = await this.store.rows<{ id: string; trace_id: string }>("usage_trace_matches", {
      sql: `SELECT id, trace_id FROM calls FINAL WHERE ${whereClause(spec, pb)} ORDER BY started_at, id LIMIT ${pb.count(req.limit + 1)}`,
      params: pb.params,
    });
    if (matched.length > req.limit) {
      throw new ClientError(413, `more than ${req.limit} calls match; narrow the filter or raise limit`);
    }
    if (matched.length === 0) return { call_usage: {}, unfinished_call_ids: [] };
    // The matching calls' traces: listed when few, else the filter again as a subquery.
    const traceIds = [...new Set(matched.map((m) => m.trace_id))];
    const spans = new ParamBuilder();
    const project = spans.str(req.projectId);
    const traces = traceIds.length <= TRACES_PER_READ ? spans.inStrings(traceIds) : `(SELECT trace_id FROM calls FINAL WHERE ${whereClause(spec, spans)})`;
    return this.rollUp(req, await this.traceSpans({ sql: spansSql(project, traces), params: spans.params }), matched.map((m) => m.id));
  }

  private async traceSpans(query: BuiltQuery): Promise<{ traceId: string; lo: number; hi: number; calls: number }[]> {
    const rows = await this.store.rows<TraceSpan>("usage_trace_spans", query);
    return rows.map((r) => ({ traceId: r.trace_id, lo: Number(r.lo), hi: Number(r.hi), calls: Number(r.calls) })).sort((a, b) => a.lo - b.lo);
  }

  /** Batches whole traces up to `limit` calls, reads and rolls each batch up. */
  private async rollUp(req: UsageRequest, spans: { traceId: string; lo: number; hi: number; calls: number }[], roots: readonly string[]): Promise<UsageRollup> {
    const batches: (typeof spans)[] = [];
    let current: typeof spans = [];
    let size = 0;
    for (const span of spans) {
      if (span.calls > req.limit) throw new UsageLimitError(span.traceId, span.calls, req.limit);
      if (current.length > 0 && (size + span.calls > req.limit || current.length >= TRACES_PER_READ)) {
        batches.push(current);
        current = [];
        size = 0;
      }
      current.push(span);
      size += span.calls;
    }
    if (current.length > 0) batches.push(current);

    const call_usage: Record<string, CallUsage> = {};
    const unfinished: string[] = [];
    for (const traces of batches) {
      const batch: Batch = {
        projectId: req.projectId,
        lo: Math.min(...traces.map((t) => t.lo)),
        hi: Math.max(...traces.map((t) => t.hi)),
        traceIds: traces.map((t) => t.traceId),
      };
      const [calls, own] = await Promise.all([this.readCalls(batch), this.readOwnUsage(batch)]);
      const book = req.includeCosts ? await this.priceBook(req.projectId, own) : null;
      const part = rollUpUsage(calls, own, roots, book);
      Object.assign(call_usage, part.call_usage);
      unfinished.push(...part.unfinished_call_ids);
    }
    return { call_usage, unfinished_call_ids: unfinished.sort() };
  }

  /** The batch's calls, deleted ones left out. */
  private async readCalls(batch: Batch): Promise<UsageCall[]> {
    const pb = new ParamBuilder();
    const project = pb.str(batch.projectId);
    const rows = await this.store.rows<CallRowJson>("usage_read_calls", {
      sql: `SELECT id, parent_id, ended_at FROM calls FINAL
            WHERE ${batchCalls(batch, project, pb)}
              AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})`,
      params: pb.params,
    });
    return rows.map((r) => ({ id: r.id, parent_id: r.parent_id, ended_at: r.ended_at === null ? null : Number(r.ended_at) }));
  }

  /** The own usage of the batch's calls; deleted calls are read too, as the children they were. */
  private async readOwnUsage(batch: Batch): Promise<OwnUsage[]> {
    const pb = new ParamBuilder();
    const project = pb.str(batch.projectId);
    const sql = ownUsageSql(
      { table: "calls FINAL", where: batchCalls(batch, project, pb), wanted: `id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})`, carry: { started_at: "started_at" } },
      pb,
    );
    const rows = await this.store.rows<OwnUsageRowJson>("usage_read_own", { sql, params: pb.params });
    return rows.map((r) => ({
      id: r.id,
      model: r.model,
      started_at: Number(r.started_at),
      requests: Number(r.requests),
      prompt_tokens: Number(r.prompt_tokens),
      completion_tokens: Number(r.completion_tokens),
      total_tokens: Number(r.total_tokens),
    }));
  }

  private async priceBook(projectId: string, own: readonly OwnUsage[]): Promise<PriceBook> {
    return this.costs.priceBook(projectId, [...new Set(own.map((o) => o.model))]);
  }
}

/** The calls of a batch of traces (deleted ones included): a condition over `calls`. */
function batchCalls(batch: Batch, project: string, pb: ParamBuilder): string {
  return `project_id = ${project}
              AND started_at >= ${pb.int(batch.lo)} AND started_at <= ${pb.int(batch.hi)}
              AND trace_id IN ${pb.inStrings(batch.traceIds)}`;
}

/** Each trace of `traces` (a subquery): its started_at span and number of calls, from the index. */
function spansSql(project: string, traces: string): string {
  return `SELECT trace_id, min(started_at) AS lo, max(started_at) AS hi, uniqExact(id) AS calls
          FROM call_index WHERE project_id = ${project} AND trace_id IN ${traces}
          GROUP BY trace_id`;
}
