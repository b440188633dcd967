import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basic, client, iso, KEY_ACME, KEY_OTHER, serviceForFile } from "../support/service.js";

/**
 * The MCP server at /mcp through the official SDK's client: the tools it lists, each tool's
 * answer over calls written through the API (a failing call found by op name and status, a
 * trace's tree, feedback and usage of a call, threads, usage per model), the key's scope, bad
 * arguments, the key checks of the route and the 50 KB bound of every answer.
 */

const service = serviceForFile();
const api = service.api;
const P = "acme/mcp";
const SECRET_PROJECT = "other/secret";
const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const op = (name: string, digest: string) => `weave:///${P}/op/${name}:${digest}`;
const HUGE = "x".repeat(300_000);

interface Written {
  id: string;
  trace: string;
  at: number;
  op: string;
  parent?: string;
  thread?: string;
  inputs?: Record<string, unknown>;
  output?: unknown;
  exception?: string;
  usage?: Record<string, Record<string, number>>;
  running?: boolean;
}

/**
 *  trace t1: plan (turn of thread th1) ── book v1 (fails: no seats)
 *                                       ├─ book v2
 *                                       └─ llm (gpt-4o usage, an OTLP-style plain op name)
 *  trace t2: plan (turn of thread th1), running
 *  trace t3: big (a 300 KB output, an input list of 5,000 items)
 */
const CALLS: Written[] = [
  { id: "plan-1", trace: "t1", at: T0, op: op("plan_trip", "p1"), thread: "th1", inputs: { city: "Paris" }, output: { booked: true } },
  { id: "book-1", trace: "t1", at: T0 + 100, op: op("book", "v1"), parent: "plan-1", inputs: { flight: "AF123" }, exception: "ValueError: no seats left on AF123" },
  { id: "book-2", trace: "t1", at: T0 + 200, op: op("book", "v2"), parent: "plan-1", inputs: { flight: "AF125" }, output: { seat: "12A" } },
  { id: "llm-1", trace: "t1", at: T0 + 300, op: "llm", parent: "plan-1", inputs: { prompt: "summarise" }, output: "done", usage: { "gpt-4o": { prompt_tokens: 1000, completion_tokens: 200, requests: 1 } } },
  { id: "plan-2", trace: "t2", at: T0 + 60_000, op: op("plan_trip", "p1"), thread: "th1", inputs: { city: "Rome" }, running: true },
  { id: "big", trace: "t3", at: T0 + 120_000, op: "big", inputs: { items: Array.from({ length: 5000 }, (_, i) => i) }, output: HUGE },
];

async function write(project: string, calls: readonly Written[], key = KEY_ACME): Promise<void> {
  const batch = calls.flatMap((c) => [
    {
      mode: "start",
      req: {
        start: {
          project_id: project, id: c.id, trace_id: c.trace, op_name: c.op, started_at: iso(c.at), attributes: {}, inputs: c.inputs ?? {},
          ...(c.parent ? { parent_id: c.parent } : {}), ...(c.thread ? { thread_id: c.thread, turn_id: c.id } : {}),
        },
      },
    },
    ...(c.running ? [] : [{ mode: "end", req: { end: { project_id: project, id: c.id, ended_at: iso(c.at + 50), output: c.output ?? null, summary: c.usage ? { usage: c.usage } : {}, ...(c.exception ? { exception: c.exception } : {}) } } }]),
  ]);
  await client(service.url, key).json("/call/upsert_batch", { batch });
}

async function connect(authorization: string): Promise<Client> {
  const mcp = new Client({ name: "tracehouse-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: { authorization } } }));
  return mcp;
}

interface ToolAnswer {
  text: string;
  isError: boolean;
  json: Record<string, any>;
}

beforeAll(async () => {
  await write(P, CALLS);
  await write(SECRET_PROJECT, [{ id: "secret-1", trace: "st1", at: T0, op: "classified", inputs: { password: "hunter2" } }], KEY_OTHER);
  await api.json("/feedback/create", { project_id: P, weave_ref: `weave:///${P}/call/llm-1`, feedback_type: "custom", payload: { note: "summary too short" } });
});

describe("the MCP server", () => {
  let mcp: Client;

  const call = async (name: string, args: Record<string, unknown>): Promise<ToolAnswer> => {
    const result = await mcp.callTool({ name, arguments: args });
    const content = result.content as { type: string; text: string }[];
    expect(content).toHaveLength(1);
    const text = content[0]!.text;
    const isError = result.isError === true;
    return { text, isError, json: isError ? {} : (JSON.parse(text) as Record<string, any>) };
  };

  beforeAll(async () => {
    mcp = await connect(`Bearer ${KEY_ACME}`);
  });
  afterAll(async () => mcp?.close());

  it("lists its six tools, each with a description and a JSON Schema of its arguments", async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["get_call", "get_trace", "list_projects", "list_threads", "search_calls", "usage_summary"]);
    for (const tool of tools) {
      expect(tool.description?.length).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.annotations?.readOnlyHint).toBe(true);
    }
    const search = tools.find((t) => t.name === "search_calls")!.inputSchema as Record<string, any>;
    expect(search.required).toEqual(["project_id"]);
    expect(Object.keys(search.properties).sort()).toEqual(["limit", "op_name", "project_id", "query", "started_after", "started_before", "status", "trace_roots_only"]);
    expect(search.properties.status.enum).toEqual(["success", "error", "running"]);
    expect(search.properties.limit.maximum).toBe(100);
    expect(search.additionalProperties).toBe(false);
    const trace = tools.find((t) => t.name === "get_trace")!.inputSchema as Record<string, any>;
    expect(trace.required.sort()).toEqual(["project_id", "trace_id"]);
  });

  it("list_projects: the projects of the key's entities only", async () => {
    const { json, isError } = await call("list_projects", {});
    expect(isError).toBe(false);
    const ids = (json.projects as { project_id: string }[]).map((p) => p.project_id);
    expect(ids).toContain(P);
    expect(ids).not.toContain(SECRET_PROJECT);
  });

  it("search_calls: finds the failing call by the op's name and status", async () => {
    const { json } = await call("search_calls", { project_id: P, op_name: "book", status: "error" });
    expect(json.calls).toHaveLength(1);
    expect(json.calls[0]).toMatchObject({
      id: "book-1", trace_id: "t1", parent_id: "plan-1", op_name: "book", op_ref: op("book", "v1"), status: "error",
      exception: "ValueError: no seats left on AF123", started_at: iso(T0 + 100), ended_at: iso(T0 + 150), latency_ms: 50,
      inputs_preview: '{"flight":"AF123"}', output_preview: null,
    });
    expect(json.more).toBeUndefined();
  });

  it("search_calls: every version of an op by its name, one version by its ref, newest first", async () => {
    const byName = await call("search_calls", { project_id: P, op_name: "book" });
    expect(byName.json.calls.map((c: { id: string }) => c.id)).toEqual(["book-2", "book-1"]);
    const byRef = await call("search_calls", { project_id: P, op_name: op("book", "v2") });
    expect(byRef.json.calls.map((c: { id: string }) => c.id)).toEqual(["book-2"]);
    const plain = await call("search_calls", { project_id: P, op_name: "llm", status: "success" });
    expect(plain.json.calls.map((c: { id: string }) => c.id)).toEqual(["llm-1"]);
  });

  it("search_calls: status running, trace roots, times, a query expression and the limit", async () => {
    const ids = async (args: Record<string, unknown>) => (await call("search_calls", { project_id: P, ...args })).json.calls.map((c: { id: string }) => c.id);
    expect(await ids({ status: "running" })).toEqual(["plan-2"]);
    expect(await ids({ trace_roots_only: true })).toEqual(["big", "plan-2", "plan-1"]);
    expect(await ids({ started_after: iso(T0 + 100), started_before: iso(T0 + 300) })).toEqual(["book-2", "book-1"]);
    expect(await ids({ query: { $expr: { $eq: [{ $getField: "inputs.city" }, { $literal: "Rome" }] } } })).toEqual(["plan-2"]);
    const limited = await call("search_calls", { project_id: P, limit: 2 });
    expect(limited.json.calls.map((c: { id: string }) => c.id)).toEqual(["big", "plan-2"]);
    expect(limited.json.more).toMatch(/more than 2 calls match/);
  });

  it("get_trace: the call tree, children under their parent, with inputs and outputs", async () => {
    const { json } = await call("get_trace", { project_id: P, trace_id: "t1" });
    expect(json.call_count).toBe(4);
    expect(json.calls).toHaveLength(1);
    const root = json.calls[0];
    expect(root).toMatchObject({ id: "plan-1", op_name: "plan_trip", status: "success", inputs: { city: "Paris" }, output: { booked: true } });
    expect(root.children.map((c: { id: string }) => c.id)).toEqual(["book-1", "book-2", "llm-1"]);
    expect(root.children[0]).toMatchObject({ op_name: "book", status: "error", exception: "ValueError: no seats left on AF123", inputs: { flight: "AF123" }, output: null });
    expect(root.children[2]).toMatchObject({ op_name: "llm", output: "done" });
    expect(json.note).toBeUndefined();
  });

  it("get_call: the call with its feedback, and usage with cost per model of it and its descendants", async () => {
    const llm = await call("get_call", { project_id: P, call_id: "llm-1" });
    expect(llm.json.call).toMatchObject({ id: "llm-1", trace_id: "t1", parent_id: "plan-1", op_name: "llm", status: "success", inputs: { prompt: "summarise" }, output: "done" });
    expect(llm.json.feedback).toEqual([expect.objectContaining({ feedback_type: "custom", payload: { note: "summary too short" }, wb_user_id: "alice" })]);
    // gpt-4o's default price since 2024-10-02: 2.5e-6 per prompt token, 1e-5 per completion token.
    expect(llm.json.usage).toEqual({
      "gpt-4o": { requests: 1, prompt_tokens: 1000, completion_tokens: 200, total_tokens: 1200, prompt_tokens_total_cost: expect.closeTo(0.0025, 9), completion_tokens_total_cost: expect.closeTo(0.002, 9) },
    });
    const root = await call("get_call", { project_id: P, call_id: "plan-1" });
    expect(root.json.feedback).toEqual([]);
    expect(root.json.usage["gpt-4o"]).toMatchObject({ prompt_tokens: 1000, completion_tokens: 200 });
    expect(root.json.usage_about).toMatch(/descendants/);
  });

  it("list_threads: the thread with its two turns", async () => {
    const { json } = await call("list_threads", { project_id: P });
    expect(json.threads).toEqual([expect.objectContaining({ thread_id: "th1", turn_count: 2, first_turn_id: "plan-1" })]);
  });

  it("usage_summary: calls, errors, and tokens and cost per model over the range", async () => {
    const { json } = await call("usage_summary", { project_id: P, started_after: iso(T0 - 1000), started_before: iso(T0 + 3_600_000) });
    expect(json).toMatchObject({ project_id: P, started_after: iso(T0 - 1000), started_before: iso(T0 + 3_600_000), calls: 6, errors: 1 });
    expect(json.models).toEqual([{ model: "gpt-4o", calls: 1, input_tokens: 1000, output_tokens: 200, total_tokens: 1200, cost: expect.closeTo(0.0045, 9) }]);
    const before = await call("usage_summary", { project_id: P, started_after: iso(T0 - 7_200_000), started_before: iso(T0) });
    expect(before.json).toMatchObject({ calls: 0, errors: 0, models: [] });
    // Without a range: every call that started before now, however long ago.
    const all = await call("usage_summary", { project_id: P });
    expect(all.json).toMatchObject({ started_after: null, calls: 6, errors: 1, models: [{ model: "gpt-4o", calls: 1, total_tokens: 1200 }] });
    const year = await call("usage_summary", { project_id: P, started_after: iso(T0 - 365 * 86_400_000), started_before: iso(T0 + 1000) });
    expect(year.json).toMatchObject({ calls: 4, errors: 1 });
  });

  it("another entity's project: a tool error for every tool, with nothing of the project's data", async () => {
    const asks: [string, Record<string, unknown>][] = [
      ["search_calls", { project_id: SECRET_PROJECT }],
      ["get_trace", { project_id: SECRET_PROJECT, trace_id: "st1" }],
      ["get_call", { project_id: SECRET_PROJECT, call_id: "secret-1" }],
      ["list_threads", { project_id: SECRET_PROJECT }],
      ["usage_summary", { project_id: SECRET_PROJECT }],
    ];
    for (const [name, args] of asks) {
      const answer = await call(name, args);
      expect({ name, isError: answer.isError, text: answer.text }).toEqual({ name, isError: true, text: `this key may not reach project ${SECRET_PROJECT}` });
    }
    // The project is there: its own entity's key reads it.
    const own = await connect(`Bearer ${KEY_OTHER}`);
    const found = await own.callTool({ name: "get_call", arguments: { project_id: SECRET_PROJECT, call_id: "secret-1" } });
    expect(JSON.stringify(found.content)).toContain("hunter2");
    await own.close();
  });

  it("bad arguments: a tool error naming the argument", async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["search_calls", { project_id: P, limit: 101 }, /limit/],
      ["search_calls", { project_id: P, status: "failed" }, /status/],
      ["search_calls", { project_id: "no-slash" }, /project_id/],
      ["search_calls", { project_id: P, started_after: "yesterday" }, /started_after/],
      ["search_calls", { project_id: P, colour: "red" }, /colour/],
      ["search_calls", { project_id: P, query: { $expr: { $eq: [{ $getField: "no_such_field" }, { $literal: 1 }] } } }, /^query: .*no_such_field/],
      ["search_calls", { project_id: P, op_name: "weave:///acme/elsewhere/op/book:v1" }, /^op_name: /],
      ["get_trace", { project_id: P }, /trace_id/],
      ["list_threads", { project_id: P, limit: 0 }, /limit/],
      ["usage_summary", { project_id: P, started_after: iso(T0), started_before: iso(T0 - 1000) }, /^started_before: must be after started_after/],
    ];
    for (const [name, args, message] of cases) {
      const answer = await call(name, args);
      expect({ name, args, isError: answer.isError }).toEqual({ name, args, isError: true });
      expect(answer.text).toMatch(message);
    }
  });

  it("an unknown trace or call: a tool error saying so", async () => {
    expect(await call("get_trace", { project_id: P, trace_id: "nope" })).toMatchObject({ isError: true, text: `no trace nope in project ${P}` });
    expect(await call("get_call", { project_id: P, call_id: "nope" })).toMatchObject({ isError: true, text: `no call nope in project ${P}` });
  });

  it("answers a long value whole when the answer fits in 50 KB", async () => {
    await write("acme/mcp-long", [{ id: "long", trace: "tl", at: T0, op: "prompted", inputs: { prompt: "p".repeat(20_000) } }]);
    const long = await call("get_call", { project_id: "acme/mcp-long", call_id: "long" });
    expect(long.json.call.inputs).toEqual({ prompt: "p".repeat(20_000) });
    expect(long.json.note).toBeUndefined();
  });

  it("keeps a huge value under 50 KB: cut where marked, with a note", async () => {
    const big = await call("get_call", { project_id: P, call_id: "big" });
    expect(Buffer.byteLength(big.text)).toBeLessThanOrEqual(50 * 1024);
    expect(big.json.call.output).toMatch(/^x{80,}…\[cut: 300000 characters in all\]$/);
    expect(big.json.call.inputs.items.at(-1)).toMatch(/^…\[cut: \d+ more items\]$/);
    expect(big.json.note).toMatch(/Shortened to stay under 50 KB/);
    const list = await call("search_calls", { project_id: P, trace_roots_only: true });
    expect(list.json.calls.find((c: { id: string }) => c.id === "big").output_preview).toMatch(/^"x{199}…\[cut\]$/);
    // A preview is short by design: not a cut of the answer's.
    expect(list.json.note).toBeUndefined();
  });

  it("keeps a wide trace under 50 KB: values left out, then calls of the tree, saying so", async () => {
    const wide = "acme/mcp-wide";
    const children = Array.from({ length: 400 }, (_, i): Written => ({ id: `w-${String(i).padStart(3, "0")}`, trace: "tw", at: T0 + 1 + i, op: "step", parent: "w-root", inputs: { i }, output: "y".repeat(1000) }));
    await write(wide, [{ id: "w-root", trace: "tw", at: T0, op: "fan_out" }, ...children]);
    const trace = await call("get_trace", { project_id: wide, trace_id: "tw" });
    expect(Buffer.byteLength(trace.text)).toBeLessThanOrEqual(50 * 1024);
    expect(trace.json.call_count).toBe(401);
    const [root] = trace.json.calls;
    expect(root).toMatchObject({ id: "w-root", op_name: "fan_out" });
    const shown = root.children.length as number;
    expect(shown).toBeGreaterThan(10);
    expect(shown).toBeLessThan(400);
    expect(root.children.map((c: { id: string }) => c.id)).toEqual(children.slice(0, shown).map((c) => c.id));
    expect(trace.json.note).toContain(`inputs, outputs and other values left out; ${400 - shown} calls of the tree left out`);
    expect(root.children[0]).toMatchObject({ id: "w-000", status: "success", inputs: "[left out: an object of 1 key]", output: "[left out: 1000 characters]" });
    // The 100 newest calls fit with their previews shortened.
    const list = await call("search_calls", { project_id: wide, limit: 100 });
    expect(Buffer.byteLength(list.text)).toBeLessThanOrEqual(50 * 1024);
    expect(list.json.calls.map((c: { id: string }) => c.id)).toEqual(children.slice(-100).reverse().map((c) => c.id));
    expect(list.json.calls[0].output_preview).toMatch(/^"y+…\[cut\]$/);
  });
});

describe("the /mcp route", () => {
  const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } } };
  const post = (headers: Record<string, string>, message: unknown = initialize) =>
    fetch(`${service.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(message) });

  it("answers 401 without a key or with a wrong one, and takes Bearer and Basic api:<key>", async () => {
    expect((await post({})).status).toBe(401);
    expect((await post({ authorization: "Bearer not-a-key-0123456789abcdef" })).status).toBe(401);
    expect((await post({ authorization: basic("not-a-key-0123456789abcdef") })).status).toBe(401);
    for (const authorization of [`Bearer ${KEY_ACME}`, basic(KEY_ACME)]) {
      const res = await post({ authorization });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "tracehouse" } } });
    }
    await expect(connect("Bearer not-a-key-0123456789abcdef")).rejects.toMatchObject({ code: 401 });
  });

  it("counts tool calls in /metrics by tool and outcome", async () => {
    const count = async (outcome: string) => {
      const text = await (await fetch(`${service.url}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith("mcp_tool_calls_total{") && l.includes('tool="list_threads"') && l.includes(`outcome="${outcome}"`));
      return line === undefined ? 0 : Number(line.split(" ").at(-1));
    };
    const [ok, error] = [await count("ok"), await count("error")];
    const mcp = await connect(`Bearer ${KEY_ACME}`);
    await mcp.callTool({ name: "list_threads", arguments: { project_id: P } });
    await mcp.callTool({ name: "list_threads", arguments: { project_id: SECRET_PROJECT } });
    await mcp.callTool({ name: "list_threads", arguments: { project_id: SECRET_PROJECT } });
    await mcp.close();
    expect({ ok: await count("ok"), error: await count("error") }).toEqual({ ok: ok + 1, error: error + 2 });
  });

  it("answers a tool call sent alone, as docs/clients.md shows it with curl", async () => {
    const res = await post({ authorization: `Bearer ${KEY_ACME}` }, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "search_calls", arguments: { project_id: P, status: "error" } } });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { id: number; result: { content: { text: string }[] } };
    expect(answer.id).toBe(7);
    expect(JSON.parse(answer.result.content[0]!.text).calls.map((c: { id: string }) => c.id)).toEqual(["book-1"]);
  });

  it("answers 405 to GET and DELETE: the server is stateless", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${service.url}/mcp`, { method, headers: { authorization: `Bearer ${KEY_ACME}` } });
      expect({ method, status: res.status, allow: res.headers.get("allow") }).toEqual({ method, status: 405, allow: "POST" });
    }
  });
});
