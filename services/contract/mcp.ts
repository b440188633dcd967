import { Datetime, ProjectId } from "./common.js";
import { QuerySchema } from "./queryExpr.js";
import { z } from "./zod.js";

/**
 * The tools of the MCP server at `/mcp` (services/mcp/): each one's name, description and the
 * zod schema of its arguments, from which the SDK answers `tools/list` with a JSON Schema and
 * checks every `tools/call` (a bad argument is a tool error naming it). Strict objects: a
 * misspelt argument is refused, not ignored. Every tool only reads.
 */
export interface McpTool<I extends z.ZodObject = z.ZodObject> {
  readonly name: string;
  readonly title: string;
  /** Written for a model choosing a tool: what it answers and when to use it. */
  readonly description: string;
  readonly input: I;
}

const tool = <I extends z.ZodObject>(t: McpTool<I>): McpTool<I> => t;

export const MCP_SEARCH_MAX_LIMIT = 100;
export const MCP_SEARCH_DEFAULT_LIMIT = 20;
export const MCP_THREADS_MAX_LIMIT = 100;
export const MCP_THREADS_DEFAULT_LIMIT = 20;
export const MCP_CALL_STATUSES = ["success", "error", "running"] as const;

const Project = ProjectId.describe("The project, `<entity>/<project>` as list_projects names it.");
const StartedAfter = Datetime.describe("ISO 8601 time, e.g. 2026-11-27T00:00:00Z: only calls that started at or after it.");
const StartedBefore = Datetime.describe("ISO 8601 time: only calls that started before it.");

export const listProjectsTool = tool({
  name: "list_projects",
  title: "List projects",
  description: "The projects this API key may read, as `<entity>/<project>` ids for the other tools' project_id.",
  input: z.strictObject({}),
});

export const searchCallsTool = tool({
  name: "search_calls",
  title: "Search calls",
  description:
    "Find calls (spans) of a project, newest first. Each call comes with its id, trace id, parent id, op name, status, " +
    "exception, start and end times, latency and a short preview of its inputs and output. " +
    "Read a whole trace with get_trace, one call with its feedback and usage with get_call.",
  input: z.strictObject({
    project_id: Project,
    op_name: z
      .string()
      .min(1)
      .max(2048)
      .optional()
      .describe('The op\'s name as the UI shows it (e.g. "book"), which matches every version of the op, or its full weave:///…/op/<name>:<digest> ref.'),
    status: z
      .enum(MCP_CALL_STATUSES)
      .optional()
      .describe('"error": the call raised; "success": it ended without raising (its descendants may have failed); "running": not ended yet.'),
    query: QuerySchema.optional().describe(
      'A filter expression as /calls/stream_query takes it, e.g. {"$expr": {"$contains": {"input": {"$getField": "inputs.city"}, "substr": {"$literal": "Paris"}}}}. ' +
        "Fields: id, trace_id, parent_id, thread_id, op_name, display_name, started_at, ended_at, exception, inputs.<path>, output.<path>, " +
        "attributes.<path>, summary.<path>, summary.weave.status, summary.weave.latency_ms.",
    ),
    trace_roots_only: z.boolean().optional().describe("Only the root call of each trace."),
    started_after: StartedAfter.optional(),
    started_before: StartedBefore.optional(),
    limit: z.number().int().min(1).max(MCP_SEARCH_MAX_LIMIT).optional().describe(`The most calls answered (default ${MCP_SEARCH_DEFAULT_LIMIT}).`),
  }),
});

export const getTraceTool = tool({
  name: "get_trace",
  title: "Read a trace",
  description:
    "A trace's call tree: each call with its op name, status, exception, times, latency, inputs and output, its child calls nested under it. " +
    "Long values are cut; read one call whole with get_call.",
  input: z.strictObject({ project_id: Project, trace_id: z.string().min(1).max(512).describe("The trace id, as search_calls answers it.") }),
});

export const getCallTool = tool({
  name: "get_call",
  title: "Read a call",
  description:
    "One call: its inputs, output, exception, attributes and summary, the feedback given on it, and the token usage and cost " +
    "per model of it and its descendants.",
  input: z.strictObject({ project_id: Project, call_id: z.string().min(1).max(512).describe("The call id, as search_calls or get_trace answers it.") }),
});

export const listThreadsTool = tool({
  name: "list_threads",
  title: "List threads",
  description:
    "A project's threads (conversations: turn calls sharing a thread_id), the latest updated first, with their turn count, times and turn durations. " +
    'Find a thread\'s calls with search_calls and query {"$expr": {"$eq": [{"$getField": "thread_id"}, {"$literal": "<thread id>"}]}}.',
  input: z.strictObject({
    project_id: Project,
    limit: z.number().int().min(1).max(MCP_THREADS_MAX_LIMIT).optional().describe(`The most threads answered (default ${MCP_THREADS_DEFAULT_LIMIT}).`),
  }),
});

export const usageSummaryTool = tool({
  name: "usage_summary",
  title: "Usage summary",
  description:
    "A project's calls and errors, and its token usage and cost per model, over the calls that started in a time range " +
    "(default: every call that started before now). Costs from the project's prices, else default prices (USD).",
  input: z.strictObject({ project_id: Project, started_after: StartedAfter.optional(), started_before: StartedBefore.optional() }),
});

export type SearchCallsArgs = z.infer<typeof searchCallsTool.input>;
export type UsageSummaryArgs = z.infer<typeof usageSummaryTool.input>;
