import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { z } from "zod";
import { canReach, type Principal } from "../auth/keys.js";
import { getCallTool, getTraceTool, listProjectsTool, listThreadsTool, searchCallsTool, usageSummaryTool, type McpTool } from "../contract/mcp.js";
import { ForbiddenError, RetryableError, ValidationError } from "../errors.js";
import { errorAnswer } from "../http/app.js";
import { mcpToolCalls } from "../metrics.js";
import { SERVICE_VERSION } from "../query/serviceRoutes.js";
import { getCall, getTrace, searchCalls } from "./callTools.js";
import type { McpReads, ToolContext } from "./context.js";
import { listProjects, listThreads, usageSummary } from "./projectTools.js";

const INSTRUCTIONS =
  "Traces of LLM and agent software stored by tracehouse. Start with list_projects; find calls with search_calls " +
  "(by op name, status, time or a query), read a trace's call tree with get_trace and one call with its feedback " +
  "and usage with get_call; list_threads lists conversations, usage_summary sums tokens and costs. Every answer is JSON of " +
  "at most 50 KB: long values are cut, and a `note` says what was.";

export interface McpServerDeps {
  readonly reads: McpReads;
  /** Read-your-writes (HttpApi.queuedWritesStored). */
  readonly queuedWritesStored: (projects: readonly string[]) => Promise<void>;
  /** The request's logger. */
  readonly log: Logger;
}

/**
 * A tool's failure as the model reads it: bad arguments name the argument (a repository's
 * `body.query` is the tool's `query`), other refusals say what the HTTP answer would
 * (http/app.ts `errorAnswer`: 403, 404, 413, 503...), and a fault is logged and answered
 * "internal error", as the HTTP layer does.
 */
function toolError(err: unknown, tool: string, log: Logger): CallToolResult {
  let text: string;
  if (err instanceof ValidationError) {
    text = err.detail.map((d) => `${d.loc.filter((part, i) => !(i === 0 && part === "body")).join(".") || "arguments"}: ${d.msg}`).join("; ");
  } else {
    const answer = errorAnswer(err);
    // As the HTTP layer logs: an expected refusal (ClickHouse away) is a warning, a fault an error.
    if (err instanceof RetryableError) log.warn({ tool, reason: answer.body }, "MCP tool refused, client may retry");
    else if (answer.status >= 500) log.error({ err, tool }, "MCP tool failed");
    text = (answer.body as { message: string }).message;
  }
  return { content: [{ type: "text", text }], isError: true };
}

/**
 * A server for one request (stateless: the transport of routes.ts makes one per request) with
 * every tool, each answering within the principal's reach.
 */
export function mcpServer(principal: Principal, deps: McpServerDeps): McpServer {
  const server = new McpServer({ name: "tracehouse", version: SERVICE_VERSION }, { instructions: INSTRUCTIONS });
  const ctx: ToolContext = {
    principal,
    reach: async (projectId) => {
      if (!canReach(principal, projectId)) throw new ForbiddenError(`this key may not reach project ${projectId}`);
      await deps.queuedWritesStored([projectId]);
      return projectId;
    },
  };
  const register = <I extends z.ZodObject>(tool: McpTool<I>, run: (args: z.infer<I>) => Promise<string>) => {
    // Widened, so that the SDK types the callback's arguments without a generic; they are I's.
    const inputSchema: z.ZodObject = tool.input;
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema, annotations: { readOnlyHint: true, openWorldHint: false } },
      // The SDK parsed the arguments with tool.input before the call.
      async (args: unknown): Promise<CallToolResult> => {
        try {
          const text = await run(args as z.infer<I>);
          mcpToolCalls.inc({ tool: tool.name, outcome: "ok" });
          return { content: [{ type: "text", text }] };
        } catch (err) {
          mcpToolCalls.inc({ tool: tool.name, outcome: "error" });
          return toolError(err, tool.name, deps.log);
        }
      },
    );
  };
  const { reads } = deps;
  register(listProjectsTool, () => listProjects(reads, ctx));
  register(searchCallsTool, (args) => searchCalls(reads, ctx, args));
  register(getTraceTool, (args) => getTrace(reads, ctx, args));
  register(getCallTool, (args) => getCall(reads, ctx, args));
  register(listThreadsTool, (args) => listThreads(reads, ctx, args));
  register(usageSummaryTool, (args) => usageSummary(reads, ctx, args));
  return server;
}
