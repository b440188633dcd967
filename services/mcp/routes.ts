import type { Request, Response } from "express";
import type { Logger } from "pino";
import type { HttpApi } from "../http/app.js";
import { requestLogger } from "../http/requestLog.js";
import type { McpReads } from "./context.js";

export const MCP_PATH = "/mcp";
/** An MCP request is a JSON-RPC message of a few arguments; far less than the API's body limit. */
const MAX_MCP_BODY_BYTES = 1024 * 1024;

export interface McpRouteDeps {
  readonly reads: McpReads;
  readonly log: Logger;
}

/**
 * The SDK's server and transport, loaded at the first MCP request: the SDK (with its own
 * schema validator) takes about half a second to load, which a process never asked over MCP
 * (every worker, most services) need not spend at its start.
 */
let sdk: Promise<{ mcpServer: typeof import("./server.js").mcpServer; Transport: typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js").StreamableHTTPServerTransport }> | null = null;
const loadSdk = () =>
  (sdk ??= Promise.all([import("./server.js"), import("@modelcontextprotocol/sdk/server/streamableHttp.js")]).then(([server, http]) => ({
    mcpServer: server.mcpServer,
    Transport: http.StreamableHTTPServerTransport,
  })));

/** GET (a stream of server messages) and DELETE (ending a session) need sessions, which a stateless server has not. */
function methodNotAllowed(_req: Request, res: Response): void {
  res.status(405).setHeader("Allow", "POST");
  res.json({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this MCP server is stateless; send POST" }, id: null });
}

/**
 * `/mcp`: the Model Context Protocol over Streamable HTTP (the official SDK's transport),
 * stateless: each POST gets a server and a transport of its own, answered as JSON. The key is
 * the API's (`Authorization: Bearer <key>` or Basic `api:<key>`, 401 without a valid one,
 * answered by the API's error handler); each tool checks the projects it reads against it.
 * Not an operation of the contract: its body is JSON-RPC, read and checked by the SDK, and
 * its tools are listed by `tools/list`, not in the OpenAPI document. Docs: docs/clients.md#mcp-server.
 */
export function mountMcpRoutes(api: HttpApi, deps: McpRouteDeps): void {
  api.route("post", MCP_PATH, async (req, res) => {
    const principal = api.authenticate(req);
    const log = requestLogger(res, deps.log);
    const { mcpServer, Transport } = await loadSdk();
    const server = mcpServer(principal, { reads: deps.reads, queuedWritesStored: (projects) => api.queuedWritesStored(projects), log });
    const transport = new Transport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize: MAX_MCP_BODY_BYTES });
    res.once("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  api.route("get", MCP_PATH, methodNotAllowed);
  api.route("delete", MCP_PATH, methodNotAllowed);
}
