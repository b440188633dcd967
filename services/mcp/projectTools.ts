import type { z } from "zod";
import type { listThreadsTool, UsageSummaryArgs } from "../contract/mcp.js";
import { MCP_THREADS_DEFAULT_LIMIT } from "../contract/mcp.js";
import type { CallMetricSpec, UsageMetricSpec } from "../contract/usage.js";
import { ValidationError } from "../errors.js";
import type { JsonObject } from "../json.js";
import { reachableProjects } from "../query/projectsRoutes.js";
import { wholeRangeWindow, type StatsWindow } from "../store/statsWindow.js";
import { toThreadView, type ThreadView } from "../store/threads/threadRows.js";
import type { Bucket } from "../store/usage/statsRead.js";
import { isoToMicros, microsToIso } from "../times.js";
import { boundedAnswer } from "./bounded.js";
import type { McpReads, ToolContext } from "./context.js";

/** list_projects: the projects of the key's entities, as `/projects` lists them. */
export async function listProjects(reads: McpReads, ctx: ToolContext): Promise<string> {
  const { projects } = await reachableProjects(reads.projects, ctx.principal);
  return boundedAnswer((fit) => ({
    projects: fit.list(projects, "projects").map((p) => ({ project_id: p.project_id, ...(p.description ? { description: fit.text(p.description) } : {}) })),
  }));
}

/** list_threads: the latest updated threads, as /threads/stream_query reads them. */
export async function listThreads(reads: McpReads, ctx: ToolContext, args: z.infer<typeof listThreadsTool.input>): Promise<string> {
  const projectId = await ctx.reach(args.project_id);
  const limit = args.limit ?? MCP_THREADS_DEFAULT_LIMIT;
  const threads: ThreadView[] = [];
  // One more than asked: whether there are more.
  for await (const row of reads.threads.stream({ projectId, sortBy: [{ field: "last_updated", direction: "desc" }], limit: limit + 1 })) threads.push(toThreadView(row));
  const more = threads.length > limit;
  return boundedAnswer((fit) => ({
    project_id: projectId,
    threads: fit.list(threads.slice(0, limit), "threads").map((t) => ({ ...t, thread_id: fit.text(t.thread_id) })),
    ...(more ? { more: `more than ${limit} threads: raise limit to see older ones` } : {}),
  }));
}

/**
 * The range usage_summary covers, as one bucket of the statistics of `/calls/stats`: from
 * started_after (else the first call) to started_before (else now).
 */
function summaryWindow(args: UsageSummaryArgs, nowMicros: number): StatsWindow {
  const end = args.started_before ? isoToMicros(args.started_before)! : nowMicros;
  const start = args.started_after ? isoToMicros(args.started_after)! : 0;
  if (end <= start) throw ValidationError.at([args.started_before ? "started_before" : "started_after"], args.started_before ? "must be after started_after" : "must be before now");
  return wholeRangeWindow(start, end);
}

const USAGE_METRICS: readonly UsageMetricSpec[] = [
  // Its count is how many calls used the model.
  { metric: "input_tokens", aggregations: ["sum", "count"] },
  { metric: "output_tokens", aggregations: ["sum"] },
  { metric: "total_tokens", aggregations: ["sum"] },
  { metric: "total_cost", aggregations: ["sum"] },
];
const CALL_METRICS: readonly CallMetricSpec[] = [
  { metric: "call_count", aggregations: ["sum"] },
  { metric: "error_count", aggregations: ["sum"] },
];

const add = (total: number, value: string | number | null | undefined) => total + (value === null || value === undefined ? 0 : Number(value));

/** Per model, the sums over the window's buckets. */
function perModel(buckets: readonly Bucket[]): JsonObject[] {
  const models = new Map<string, { model: string; calls: number; input_tokens: number; output_tokens: number; total_tokens: number; cost: number }>();
  for (const b of buckets) {
    const model = String(b.model);
    const m = models.get(model) ?? { model, calls: 0, input_tokens: 0, output_tokens: 0, total_tokens: 0, cost: 0 };
    m.calls = add(m.calls, b.count_input_tokens);
    m.input_tokens = add(m.input_tokens, b.sum_input_tokens);
    m.output_tokens = add(m.output_tokens, b.sum_output_tokens);
    m.total_tokens = add(m.total_tokens, b.sum_total_tokens);
    m.cost = add(m.cost, b.sum_total_cost);
    models.set(model, m);
  }
  return [...models.values()].sort((a, b) => b.total_tokens - a.total_tokens || a.model.localeCompare(b.model));
}

/** usage_summary: calls, errors, and tokens and cost per model, as /calls/stats computes them, over one bucket. */
export async function usageSummary(reads: McpReads, ctx: ToolContext, args: UsageSummaryArgs): Promise<string> {
  const projectId = await ctx.reach(args.project_id);
  const window = summaryWindow(args, Date.now() * 1000);
  await reads.costs.syncDefaults();
  const [usage, calls] = await Promise.all([
    reads.stats.usageBuckets(projectId, null, window, USAGE_METRICS),
    reads.stats.callBuckets(projectId, null, window, CALL_METRICS),
  ]);
  const models = perModel(usage);
  return boundedAnswer((fit) => ({
    project_id: projectId,
    started_after: args.started_after ? microsToIso(window.startMicros) : null,
    started_before: microsToIso(window.endMicros),
    calls: calls.reduce((n, b) => add(n, b.sum_call_count), 0),
    errors: calls.reduce((n, b) => add(n, b.sum_error_count), 0),
    models: fit.list(models, "models"),
    about:
      "started_after null: from the project's first call. errors: calls that raised. Per model: calls that used it, their own tokens (a call's children count for themselves), " +
      "cost from the project's prices, else default prices (USD), 0 for a model without a price.",
  }));
}
