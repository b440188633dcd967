/**
 * OpenInference, unmodified: `@arizeai/openinference-instrumentation-openai` on the
 * OpenTelemetry Node SDK instrumenting the OpenAI Node SDK (`openai`), with an agent function
 * traced by `@arizeai/openinference-core` inside a session (test/clients/openinference-openai.mjs),
 * run as its users run it: a program of its own configured by OTEL_EXPORTER_OTLP_TRACES_ENDPOINT /
 * _HEADERS, its OpenAI client by OPENAI_BASE_URL = a fake OpenAI-compatible server this test
 * starts. Its spans: `weather-agent` (AGENT) → `OpenAI Chat Completions` (LLM), both carrying
 * `session.id`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceForFile } from "../support/service.js";
import { otelExporterEnv, runClient, storedCalls, ANSWERING_MODEL, onlyCall, type ClientCall, weatherOpenAi } from "./clientSupport.js";
import type { FakeOpenAi } from "./fakeOpenAi.js";

const P = "acme/openinference-openai";
const MODEL = ANSWERING_MODEL;

const service = serviceForFile();
const api = service.api;

type Call = ClientCall;
let calls: Call[] = [];
let openAi: FakeOpenAi;

beforeAll(async () => {
  openAi = await weatherOpenAi();
  expect(
    await runClient(process.execPath, "openinference-openai.mjs", {
      ...otelExporterEnv(service.url, P),
      SESSION_ID: "oi-session",
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: openAi.baseUrl,
    }),
  ).toEqual({ text: "Sunny in Lyon." });
  calls = await storedCalls<Call>(api, P, 2);
});
afterAll(() => openAi?.close());

const only = (name: string) => onlyCall(calls, name);
const messages = [{ role: "system", content: "Answer briefly." }, { role: "user", content: "What is the weather in Lyon?" }];

describe("OpenInference instrumenting the OpenAI SDK", () => {
  it("stores every span as a call, in its tree", () => {
    expect(calls.map((c) => c.op_name).sort()).toEqual(["OpenAI Chat Completions", "weather-agent"]);
    const [agent, chat] = [only("weather-agent"), only("OpenAI Chat Completions")];
    expect([agent.parent_id, chat.parent_id, chat.trace_id]).toEqual([null, agent.id, agent.trace_id]);
    expect(agent.inputs).toEqual({ value: "What is the weather in Lyon?" });
    expect(agent.output).toBe("Sunny in Lyon.");
    expect(agent.attributes).toMatchObject({ kind: "AGENT" });
    expect(agent.summary["usage"]).toBeUndefined();
  });

  it("maps the model call's prompt, answer, model and usage under the answering model", () => {
    expect(openAi.requests).toEqual([{ model: "gpt-4o-mini", temperature: 0.2, messages }]);
    const chat = only("OpenAI Chat Completions");
    expect(chat.inputs).toEqual({ model: "gpt-4o-mini", temperature: 0.2, messages });
    expect(chat.output).toEqual({
      id: "chatcmpl-1", object: "chat.completion", created: 1_767_607_200, model: MODEL,
      choices: [{ index: 0, message: { role: "assistant", content: "Sunny in Lyon." }, finish_reason: "stop", logprobs: null }],
      usage: { prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 },
    });
    const { otel: _otel, ...mapped } = chat.attributes;
    expect(mapped).toEqual({ model: MODEL, system: "openai", kind: "LLM", model_parameters: { model: "gpt-4o-mini", temperature: 0.2 } });
    expect(chat.summary["usage"]).toEqual({ [MODEL]: { prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 } });
  });

  it("counts the trace's usage once", async () => {
    const [agent, chat] = [only("weather-agent"), only("OpenAI Chat Completions")];
    const once = { [MODEL]: { requests: 0, prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 } };
    const byTrace = await api.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: P, filter: { trace_ids: [agent.trace_id] } });
    expect(byTrace.call_usage).toEqual({ [agent.id]: once, [chat.id]: once });
    const byCall = await api.json<{ call_usage: Record<string, unknown> }>("/calls/usage", { project_id: P, call_ids: [agent.id] });
    expect(byCall.call_usage).toEqual({ [agent.id]: once });
  });

  it("stores the session (`session.id` on every span) as a thread of one turn", async () => {
    const [agent, chat] = [only("weather-agent"), only("OpenAI Chat Completions")];
    expect([agent, chat].map((c) => [c.thread_id, c.turn_id])).toEqual([["oi-session", agent.id], ["oi-session", null]]);
    const threads = await api.lines<{ thread_id: string; turn_count: number }>("/threads/stream_query", { project_id: P });
    expect(threads.map((t) => [t.thread_id, t.turn_count])).toEqual([["oi-session", 1]]);
  });
});
