/**
 * Langfuse 5's own client, unmodified (`@langfuse/tracing` + `@langfuse/otel` on the
 * OpenTelemetry Node SDK, test/clients/langfuse.mjs), run as its users run it: a program of its
 * own configured by LANGFUSE_BASE_URL = our URL, LANGFUSE_PUBLIC_KEY = <entity>/<project>,
 * LANGFUSE_SECRET_KEY = our API key. Its exporter posts OTLP/JSON to
 * `/api/public/otel/v1/traces`; the calls are read back through the API.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { untilRead } from "../support/polling.js";
import { KEY_ACME, KEY_OTHER, serviceForFile } from "../support/service.js";
import { decodeProtobufStatus, JSON_TYPE, postOtlp, protobufBody } from "./httpSupport.js";

const LANGFUSE_PATH = "/api/public/otel/v1/traces";
const CLIENT = fileURLToPath(new URL("../clients/langfuse.mjs", import.meta.url));
const P = "acme/langfuse";

const service = serviceForFile();
const api = service.api;

type Call = { id: string; parent_id: string | null; op_name: string; thread_id: string | null; turn_id: string | null; inputs: unknown; output: unknown; attributes: Record<string, unknown>; summary: Record<string, unknown> };

async function runClient(env: Record<string, string>): Promise<{ ids: { traceId: string; agentId: string; generationId: string }; stderr: string }> {
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLIENT], {
    env: { PATH: process.env.PATH ?? "", LANGFUSE_BASE_URL: service.url, ...env },
    timeout: 60_000,
  });
  return { ids: JSON.parse(stdout.trim().split("\n").at(-1)!), stderr };
}

/** The trace's calls, once all `count` are readable (the answer may precede storage with the durable log). */
async function traceCalls(project: string, traceId: string, count: number): Promise<Call[]> {
  return untilRead(() => api.lines<Call>("/calls/stream_query", { project_id: project, filter: { trace_ids: [traceId] } }), (calls) => calls.length >= count, { timeoutMs: 20_000, everyMs: 100 });
}

const basicOf = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}`;
const mapped = (call: Call) => {
  const { otel: _otel, ...families } = call.attributes;
  return families;
};

describe("Langfuse 5 client against /api/public/otel/v1/traces", () => {
  it("stores the agent and its generation with input, output, model, usage under the model and the session", async () => {
    const { ids } = await runClient({ LANGFUSE_PUBLIC_KEY: P, LANGFUSE_SECRET_KEY: KEY_ACME, SESSION_ID: "lf-session" });
    const calls = await traceCalls(P, ids.traceId, 2);
    const agent = calls.find((c) => c.id === ids.agentId)!;
    const generation = calls.find((c) => c.id === ids.generationId)!;
    expect(calls).toHaveLength(2);

    expect(agent).toMatchObject({
      op_name: "answer-question",
      parent_id: null,
      thread_id: "lf-session",
      turn_id: ids.agentId,
      inputs: { question: "2+2?" },
      output: "4",
    });
    expect(agent.summary["usage"]).toBeUndefined();
    expect(mapped(agent)).toEqual({ kind: "agent", trace_name: "support chat", tags: ["beta", "eu"], metadata: { tenant: "t-1" } });

    expect(generation).toMatchObject({
      op_name: "llm-call",
      parent_id: ids.agentId,
      thread_id: "lf-session",
      turn_id: null,
      inputs: { value: [{ role: "user", content: "2+2?" }] },
      output: { role: "assistant", content: "4" },
    });
    expect(generation.summary["usage"]).toEqual({ "gpt-4o-mini": { input_tokens: 31, output_tokens: 7, total_tokens: 38 } });
    expect(mapped(generation)).toEqual({
      model: "gpt-4o-mini",
      kind: "generation",
      trace_name: "support chat",
      model_parameters: { temperature: 0.2 },
      tags: ["beta", "eu"],
      metadata: { tenant: "t-1" },
    });

    const usage = await api.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: P, filter: { trace_ids: [ids.traceId] } });
    const once = { "gpt-4o-mini": { requests: 0, prompt_tokens: 31, completion_tokens: 7, total_tokens: 38 } };
    expect(usage.call_usage).toEqual({ [ids.agentId]: once, [ids.generationId]: once });

    const threads = await api.lines<{ thread_id: string; turn_count: number }>("/threads/stream_query", { project_id: P });
    expect(threads.map((t) => [t.thread_id, t.turn_count])).toEqual([["lf-session", 1]]);
  });

  it("answers 403 for a secret key that does not reach the public key's project, and stores nothing", async () => {
    const body = protobufBody({ spans: [{ traceId: "1".repeat(32), spanId: "2".repeat(16), name: "s", start: 1_000n, end: 2_000n }] });
    const res = await postOtlp(service.url, body, { path: LANGFUSE_PATH, key: null, project: null, headers: { authorization: basicOf(P, KEY_OTHER) } });
    expect(res.status).toBe(403);
    expect(decodeProtobufStatus(res.body).code).toBe(7);
    expect(await api.lines("/calls/stream_query", { project_id: P, filter: { trace_ids: ["1".repeat(32)] } })).toEqual([]);
  });

  it("answers 401 for an unknown secret key, 400 for a public key that names no project", async () => {
    const post = (authorization: string) => postOtlp(service.url, "{}", { path: LANGFUSE_PATH, contentType: JSON_TYPE, key: null, project: null, headers: { authorization } });
    const unknown = await post(basicOf(P, "not-a-key"));
    expect({ status: unknown.status, body: JSON.parse(unknown.body.toString()) }).toEqual({ status: 401, body: { code: 16, message: "missing or invalid API key" } });
    const langfuseStyle = await post(basicOf("pk-lf-1234", KEY_ACME));
    expect({ status: langfuseStyle.status, body: JSON.parse(langfuseStyle.body.toString()) }).toEqual({
      status: 400,
      body: { code: 3, message: 'the public key (Basic user name) must name the project as <entity>/<project>, got "pk-lf-1234"' },
    });
  });

  it("takes protobuf on the same path, and a project_id header over the public key", async () => {
    const traceId = "3".repeat(32);
    const body = protobufBody({ spans: [{ traceId, spanId: "4".repeat(16), name: "pb", start: 1_000n, end: 2_000n, attributes: { "langfuse.observation.input": "hi" } }] });
    const viaKey = await postOtlp(service.url, body, { path: LANGFUSE_PATH, key: null, project: null, headers: { authorization: basicOf(P, KEY_ACME) } });
    expect(viaKey.status).toBe(200);
    expect((await traceCalls(P, traceId, 1)).map((c) => [c.op_name, c.inputs])).toEqual([["pb", { value: "hi" }]]);

    const other = "5".repeat(32);
    const viaHeader = await postOtlp(service.url, protobufBody({ spans: [{ traceId: other, spanId: "6".repeat(16), name: "pb2", start: 1_000n, end: 2_000n }] }), {
      path: LANGFUSE_PATH,
      key: null,
      project: "acme/other-project",
      headers: { authorization: basicOf(P, KEY_ACME) },
    });
    expect(viaHeader.status).toBe(200);
    expect((await traceCalls("acme/other-project", other, 1)).map((c) => c.op_name)).toEqual(["pb2"]);
    expect(await api.lines("/calls/stream_query", { project_id: P, filter: { trace_ids: [other] } })).toEqual([]);
  });
});
