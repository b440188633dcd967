import type { z } from "zod";
import type { getCallTool, getTraceTool, SearchCallsArgs } from "../contract/mcp.js";
import { MCP_SEARCH_DEFAULT_LIMIT } from "../contract/mcp.js";
import type { Operation } from "../contract/queryExpr.js";
import { DEFAULT_USAGE_LIMIT } from "../contract/usage.js";
import { NotFoundError, RefParseError, ValidationError } from "../errors.js";
import type { JsonObject, JsonValue } from "../json.js";
import { viewCalls } from "../query/callsRoutes.js";
import { formatRef, parseRef, projectIdOf } from "../refs.js";
import type { CallsQuerySpec } from "../store/calls/callsQuery.js";
import type { CallUsage } from "../store/usage/usageRollup.js";
import { boundedAnswer } from "./bounded.js";
import { briefCall, feedbackOf, fullCall, nestCalls, showTree, type ApiCall } from "./callViews.js";
import type { McpReads, ToolContext } from "./context.js";

/** The most calls of one trace get_trace reads (by start time); a larger trace says so. */
const MAX_TRACE_CALLS = 1000;
/** What lists and trees show of a call (callViews.ts): not its attributes, which OTLP spans fill with their whole dump. */
const SHOWN_COLUMNS = ["id", "trace_id", "parent_id", "op_name", "display_name", "started_at", "ended_at", "exception", "summary", "inputs", "output"];

async function collect(calls: AsyncIterable<ApiCall>): Promise<ApiCall[]> {
  const out: ApiCall[] = [];
  for await (const call of calls) out.push(call);
  return out;
}

/**
 * The stored op names `op_name` stands for: a ref of the project as it is (a `:*` digest
 * matching every version), or a name as the UI shows it, which is the op name itself (OTLP
 * spans, plain clients) or any version of the op ref of that name (the Weave SDKs).
 */
function opNames(opName: string, projectId: string): string[] {
  const [entity = "", project = ""] = projectId.split("/");
  if (!opName.startsWith("weave:///")) return [opName, formatRef({ kind: "op", entity, project, name: opName, digest: "*", extra: [] })];
  let ref;
  try {
    ref = parseRef(opName);
  } catch (err) {
    if (err instanceof RefParseError) throw ValidationError.at(["op_name"], err.message);
    throw err;
  }
  if (ref.kind !== "op") throw ValidationError.at(["op_name"], `a ref given as op_name must be an op ref (weave:///<entity>/<project>/op/<name>:<digest>), not a ${ref.kind} ref`);
  if (projectIdOf(ref) !== projectId) throw ValidationError.at(["op_name"], `the op ref names project ${projectIdOf(ref)}, not ${projectId}`);
  return [opName];
}

const field = (name: string) => ({ $getField: name });
const literal = (value: JsonValue) => ({ $literal: value });

/** The status as `summary.weave.status` holds it; a call that ended without raising but whose descendants failed is a success here. */
function statusCondition(status: NonNullable<SearchCallsArgs["status"]>): Operation {
  const shown = field("summary.weave.status");
  if (status === "success") return { $in: [shown, [literal("success"), literal("descendant_error")]] };
  return { $eq: [shown, literal(status)] };
}

/** The arguments as one query expression: the caller's, the status and the start times, all to hold. */
function searchCondition(args: SearchCallsArgs): Operation | null {
  const all: Operation[] = [];
  if (args.query) all.push(args.query.$expr);
  if (args.status) all.push(statusCondition(args.status));
  if (args.started_after) all.push({ $gte: [field("started_at"), literal(args.started_after)] });
  if (args.started_before) all.push({ $not: [{ $gte: [field("started_at"), literal(args.started_before)] }] });
  if (all.length === 0) return null;
  return all.length === 1 ? all[0]! : { $and: all };
}

/** search_calls: the newest calls the arguments match, as /calls/stream_query reads them. */
export async function searchCalls(reads: McpReads, ctx: ToolContext, args: SearchCallsArgs): Promise<string> {
  const projectId = await ctx.reach(args.project_id);
  const limit = args.limit ?? MCP_SEARCH_DEFAULT_LIMIT;
  const condition = searchCondition(args);
  const spec: CallsQuerySpec = {
    projectId,
    filter: { op_names: args.op_name ? opNames(args.op_name, projectId) : null, trace_roots_only: args.trace_roots_only ?? null },
    query: condition ? { $expr: condition } : null,
    sortBy: [{ field: "started_at", direction: "desc" }],
    columns: SHOWN_COLUMNS,
    // One more than asked: whether more match.
    limit: limit + 1,
  };
  const calls = await collect(viewCalls(reads.calls, spec, {}));
  const more = calls.length > limit;
  return boundedAnswer((fit) => ({
    project_id: projectId,
    calls: fit.list(calls.slice(0, limit), "calls").map((call) => briefCall(call, fit)),
    ...(more ? { more: `more than ${limit} calls match: narrow the search (started_before the oldest shown, a query) or raise limit` } : {}),
  }));
}

/** get_trace: the trace's calls by start time, nested by parent. */
export async function getTrace(reads: McpReads, ctx: ToolContext, args: z.infer<typeof getTraceTool.input>): Promise<string> {
  const projectId = await ctx.reach(args.project_id);
  const spec: CallsQuerySpec = {
    projectId,
    filter: { trace_ids: [args.trace_id] },
    sortBy: [{ field: "started_at", direction: "asc" }],
    columns: SHOWN_COLUMNS,
    limit: MAX_TRACE_CALLS + 1,
  };
  const calls = await collect(viewCalls(reads.calls, spec, {}));
  if (calls.length === 0) throw new NotFoundError(`no trace ${args.trace_id} in project ${projectId}`);
  const read = calls.slice(0, MAX_TRACE_CALLS);
  const roots = nestCalls(read);
  return boundedAnswer((fit) => {
    if (calls.length > MAX_TRACE_CALLS) fit.shorten(`the trace holds more than ${MAX_TRACE_CALLS} calls: its first ${MAX_TRACE_CALLS} by start time are read`);
    return { project_id: projectId, trace_id: args.trace_id, call_count: read.length, calls: showTree(roots, fit) };
  });
}

/** A feedback record as a model reads it: who said what, when. */
function feedbackView(feedback: JsonObject, value: (v: JsonValue) => JsonValue): JsonObject {
  const out: JsonObject = {};
  for (const key of ["id", "feedback_type", "created_at", "wb_user_id", "creator", "annotation_ref", "runnable_ref", "queue_id"]) {
    const v = feedback[key];
    if (v !== null && v !== undefined) out[key] = v;
  }
  out["payload"] = value(feedback["payload"] ?? null);
  return out;
}

/** Per model: requests, tokens and the cost of each side (0 for a model without a price). */
function usageView(usage: CallUsage): JsonObject {
  const out: JsonObject = {};
  for (const [model, u] of Object.entries(usage)) {
    out[model] = {
      requests: u.requests,
      prompt_tokens: u.prompt_tokens,
      completion_tokens: u.completion_tokens,
      total_tokens: u.total_tokens,
      prompt_tokens_total_cost: u.prompt_tokens_total_cost ?? 0,
      completion_tokens_total_cost: u.completion_tokens_total_cost ?? 0,
    };
  }
  return out;
}

/** get_call: the call as /call/read reads it with its feedback, and the usage of it and its descendants as /calls/usage sums it. */
export async function getCall(reads: McpReads, ctx: ToolContext, args: z.infer<typeof getCallTool.input>): Promise<string> {
  const projectId = await ctx.reach(args.project_id);
  const spec: CallsQuerySpec = { projectId, filter: { call_ids: [args.call_id] }, limit: 1, sortBy: [{ field: "id", direction: "asc" }] };
  const [call] = await collect(viewCalls(reads.calls, spec, { include_feedback: true }));
  if (!call) throw new NotFoundError(`no call ${args.call_id} in project ${projectId}`);
  const usage = await reads.usage.callsUsage({ projectId, callIds: [args.call_id], includeCosts: true, limit: DEFAULT_USAGE_LIMIT, skipLargeTraces: true });
  const skipped = usage.skipped_call_ids?.includes(args.call_id) ?? false;
  const unfinished = usage.unfinished_call_ids.length > 0;
  return boundedAnswer((fit) => ({
    project_id: projectId,
    call: fullCall(call, fit),
    feedback: fit.list(feedbackOf(call), "feedback records").map((f) => feedbackView(f, (v) => fit.value(v))),
    usage: skipped ? null : usageView(usage.call_usage[args.call_id] ?? {}),
    usage_about: skipped
      ? `not summed: the trace holds more than ${DEFAULT_USAGE_LIMIT} calls`
      : `tokens and cost per model of this call and all its descendants${unfinished ? "; some of them have not ended, so it may still grow" : ""}`,
  }));
}
