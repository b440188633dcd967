/**
 * OpenLLMetry, unmodified: Traceloop's SDK (`@traceloop/node-server-sdk`) instrumenting the
 * OpenAI Node SDK (`openai`), test/clients/traceloop-openai.mjs, run as its users run it: a
 * program of its own configured by TRACELOOP_BASE_URL = our `/otel` (its exporter appends
 * `/v1/traces`) and TRACELOOP_HEADERS, its OpenAI client by OPENAI_BASE_URL = a fake
 * OpenAI-compatible server this test starts. Its spans: `conversation.<id>` (withConversation)
 * → `answer-question.workflow` → `openai.chat`, every one carrying `gen_ai.conversation.id`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basic, KEY_ACME, serviceForFile } from "../support/service.js";
import { runClient, storedCalls, ANSWERING_MODEL, onlyCall, type ClientCall, weatherOpenAi } from "./clientSupport.js";
import type { FakeOpenAi } from "./fakeOpenAi.js";

const P = "acme/traceloop";
const MODEL = ANSWERING_MODEL;

const service = serviceForFile();
const api = service.api;

type Call = ClientCall;
let calls: Call[] = [];
let openAi: FakeOpenAi;

beforeAll(async () => {
  openAi = await weatherOpenAi();
  const env = {
    SESSION_ID: "tl-session",
    OPENAI_API_KEY: "sk-test",
    OPENAI_BASE_URL: openAi.baseUrl,
    TRACELOOP_BASE_URL: `${service.url}/otel`,
    // Traceloop splits each `key=value` at '=': the base64 padding is lost, which base64 tolerates.
    TRACELOOP_HEADERS: `Authorization=${basic(KEY_ACME)},project_id=${P}`,
  };
  expect(await runClient(process.execPath, "traceloop-openai.mjs", env)).toEqual({ text: "Sunny in Lyon." });
  calls = await storedCalls<Call>(api, P, 3);
});
afterAll(() => openAi?.close());

const only = (name: string) => onlyCall(calls, name);
/** The calls from the root down (started_at has millisecond precision: the three may tie). */
const tree = () => [only("conversation.tl-session.workflow"), only("answer-question.workflow"), only("chat gpt-4o-mini")] as const;
const text = (content: string) => [{ type: "text", content }];

describe("OpenLLMetry (Traceloop) instrumenting the OpenAI SDK", () => {
  it("stores every span as a call, in its tree", () => {
    expect(calls.map((c) => c.op_name).sort()).toEqual(["answer-question.workflow", "chat gpt-4o-mini", "conversation.tl-session.workflow"]);
    const [conversation, workflow, chat] = tree();
    expect(new Set(calls.map((c) => c.trace_id))).toEqual(new Set([conversation.trace_id]));
    expect([conversation.parent_id, workflow.parent_id, chat.parent_id]).toEqual([null, conversation.id, workflow.id]);
    expect([conversation.attributes["kind"], workflow.attributes["kind"]]).toEqual(["workflow", "workflow"]);
    expect(workflow.inputs).toEqual({ args: [], kwargs: {} });
    // Traceloop's `traceloop.entity.output` is JSON text; a JSON string stays as that text.
    expect(workflow.output).toBe('"Sunny in Lyon."');
  });

  it("maps the model call's prompt, answer, model and usage under the answering model", () => {
    expect(openAi.requests).toEqual([{ model: "gpt-4o-mini", temperature: 0.2, messages: [{ role: "system", content: "Answer briefly." }, { role: "user", content: "What is the weather in Lyon?" }] }]);
    const chat = only("chat gpt-4o-mini");
    expect(chat.inputs).toEqual({ value: [{ role: "system", parts: text("Answer briefly.") }, { role: "user", parts: text("What is the weather in Lyon?") }] });
    expect(chat.output).toEqual([{ role: "assistant", finish_reason: "stop", parts: text("Sunny in Lyon.") }]);
    const { otel: _otel, ...mapped } = chat.attributes;
    expect(mapped).toEqual({ model: MODEL, operation: "chat", model_parameters: { temperature: 0.2 } });
    expect(chat.summary["usage"]).toEqual({ [MODEL]: { input_tokens: 21, output_tokens: 5 } });
    expect(calls.filter((c) => c.summary["usage"] !== undefined)).toEqual([chat]);
  });

  it("counts the trace's usage once", async () => {
    const [conversation, workflow, chat] = tree();
    const once = { [MODEL]: { requests: 0, prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 } };
    const byTrace = await api.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: P, filter: { trace_ids: [conversation.trace_id] } });
    expect(byTrace.call_usage).toEqual({ [conversation.id]: once, [workflow.id]: once, [chat.id]: once });
    const byCall = await api.json<{ call_usage: Record<string, unknown> }>("/calls/usage", { project_id: P, call_ids: [conversation.id] });
    expect(byCall.call_usage).toEqual({ [conversation.id]: once });
  });

  it("stores the conversation (`gen_ai.conversation.id` on every span) as a thread of one turn", async () => {
    expect(tree().map((c) => [c.thread_id, c.turn_id])).toEqual([["tl-session", tree()[0].id], ["tl-session", null], ["tl-session", null]]);
    const threads = await api.lines<{ thread_id: string; turn_count: number }>("/threads/stream_query", { project_id: P });
    expect(threads.map((t) => [t.thread_id, t.turn_count])).toEqual([["tl-session", 1]]);
  });
});
