import { callReadOp, callsQueryStatsOp, callsStreamQueryOp } from "../contract/callOperations.js";
import type { CallSchema, CallsQueryReq } from "../contract/calls.js";
import { ClientError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import type { CallRow } from "../store/calls/callRows.js";
import type { CallsReadRepository } from "../store/calls/callsRead.js";
import type { CallsQuerySpec } from "../store/calls/callsQuery.js";
import { toCallSchema, type CallViewOptions } from "./callView.js";
import type { RefExpander } from "./expandRefs.js";
import { fillFromGenAiEvents } from "./callLogs.js";
import type { OtelLogsRepository } from "../store/otelLogs/otelLogsRepository.js";
import { chunked, writeStream } from "./jsonLines.js";

/** Turns a chunk of rows into API calls, adding what the request asked to include. */
export type CallEnricher = (rows: readonly CallRow[], calls: Record<string, unknown>[]) => Promise<void>;

export interface CallsQueryDeps {
  readonly reads: CallsReadRepository;
  /** A span's OTLP log records: its GenAI events fill the inputs and output it has not (callLogs.ts). */
  readonly logs?: OtelLogsRepository;
  /** Extra per-chunk enrichers (costs, feedback) keyed by the include flag that asks for them. */
  readonly enrichers?: Partial<Record<"include_costs" | "include_feedback", (projectId: string) => CallEnricher>>;
  /** Resolves `expand_columns`; without it the field is refused. */
  readonly expander?: RefExpander;
}

/** The checked expand columns and the field set of the paths the query and sort name below them. */
async function expansion(deps: CallsQueryDeps, projectId: string, req: Pick<CallsQueryReq, "expand_columns" | "query" | "sort_by">) {
  if (!req.expand_columns || req.expand_columns.length === 0) return { columns: [], fields: null };
  if (!deps.expander) throw new ClientError(400, "expand_columns is not served here");
  const columns = deps.expander.columns(req.expand_columns);
  return { columns, fields: await deps.expander.fieldsFor(projectId, columns, req.query, req.sort_by) };
}

const CHUNK = 200;

/** Whether the calls asked for carry their inputs or output (all columns when none are named). */
function wantsInputsOrOutput(columns: readonly string[] | null | undefined): boolean {
  return !columns || columns.length === 0 || columns.includes("inputs") || columns.includes("output");
}

/** What a calls read asks to include beside each call's own fields. */
export interface CallViewFlags {
  readonly include_storage_size?: boolean | null;
  readonly include_total_storage_size?: boolean | null;
  readonly include_usernames?: boolean | null;
  readonly include_costs?: boolean | null;
  readonly include_feedback?: boolean | null;
}

/**
 * The calls a spec reads, as API calls (CallSchema): each row's view, GenAI events filling a
 * span's missing inputs and output, what the flags include, the expanded columns. The one
 * path from stored rows to the calls clients read (these routes and the MCP tools).
 */
export async function* viewCalls(
  deps: CallsQueryDeps,
  spec: CallsQuerySpec,
  flags: CallViewFlags,
  expandColumns: readonly string[] = [],
) {
  const enrichers = (["include_costs", "include_feedback"] as const)
    .filter((flag) => flags[flag] && deps.enrichers?.[flag])
    .map((flag) => deps.enrichers![flag]!(spec.projectId));
  for await (const rows of chunked(deps.reads.stream(spec), CHUNK)) {
    const sizes = flags.include_total_storage_size
      ? await deps.reads.traceStorageSizes(spec.projectId, [...new Set(rows.map((r) => r.trace_id))])
      : null;
    const calls = rows.map((row) => {
      const options: CallViewOptions = {
        columns: spec.columns,
        includeStorageSize: !!flags.include_storage_size,
        includeUsernames: !!flags.include_usernames,
        ...(sizes && row.parent_id === null ? { traceStorageSize: sizes.get(row.trace_id) ?? 0 } : {}),
      };
      return toCallSchema(row, options) as Record<string, unknown>;
    });
    if (deps.logs && wantsInputsOrOutput(spec.columns)) await fillFromGenAiEvents(deps.logs, spec.projectId, calls);
    for (const enrich of enrichers) await enrich(rows, calls);
    if (expandColumns.length > 0) await deps.expander?.expandCalls(spec.projectId, calls, expandColumns);
    yield* calls;
  }
}

export function mountCallQueries(api: HttpApi, deps: CallsQueryDeps): void {
  api.mount(callsStreamQueryOp, async ({ body: req }, ctx) => {
    const expand = await expansion(deps, req.project_id, req);
    const spec: CallsQuerySpec = {
      projectId: req.project_id,
      filter: req.filter,
      query: req.query,
      sortBy: req.sort_by,
      limit: req.limit,
      offset: req.offset,
      columns: req.columns,
      expandedFields: expand.fields,
    };
    // Weave's default: the expanded values are returned unless asked not to.
    const returned = req.return_expanded_column_values === false ? [] : expand.columns;
    await writeStream(ctx.res, ctx.req.headers.accept, viewCalls(deps, spec, req, returned));
  });

  api.mount(callReadOp, async ({ body: req }) => {
    const spec: CallsQuerySpec = { projectId: req.project_id, filter: { call_ids: [req.id] }, limit: 1, sortBy: [{ field: "id", direction: "asc" }] };
    for await (const call of viewCalls(deps, spec, req)) return { call: call as CallSchema };
    return { call: null };
  });

  api.mount(callsQueryStatsOp, async ({ body: req }) => {
    const expand = await expansion(deps, req.project_id, { ...req, sort_by: null });
    const spec: CallsQuerySpec = { projectId: req.project_id, filter: req.filter, query: req.query, limit: req.limit, expandedFields: expand.fields };
    return deps.reads.count(spec, !!req.include_total_storage_size);
  });
}
