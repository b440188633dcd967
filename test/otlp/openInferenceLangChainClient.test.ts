/**
 * OpenInference for LangChain, unmodified: `@arizeai/openinference-instrumentation-langchain` on
 * the OpenTelemetry Node SDK, a chain of `@langchain/core` (a chat prompt piped into
 * `@langchain/openai`'s ChatOpenAI) invoked in an OpenInference session
 * (test/clients/openinference-langchain.mjs), run as its users run it: a program of its own
 * configured by OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _HEADERS, ChatOpenAI's OpenAI client by
 * OPENAI_BASE_URL = a fake OpenAI-compatible server this test starts. Its spans:
 * `RunnableSequence` (CHAIN) → `ChatPromptTemplate` (PROMPT), `ChatOpenAI` (LLM), all carrying
 * `session.id`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceForFile } from "../support/service.js";
import { otelExporterEnv, runClient, storedCalls, ANSWERING_MODEL, onlyCall, type ClientCall, weatherOpenAi } from "./clientSupport.js";
import type { FakeOpenAi } from "./fakeOpenAi.js";

const P = "acme/openinference-langchain";
const MODEL = ANSWERING_MODEL;

const service = serviceForFile();
const api = service.api;

type Call = ClientCall;
let calls: Call[] = [];
let openAi: FakeOpenAi;

beforeAll(async () => {
  openAi = await weatherOpenAi();
  expect(
    await runClient(process.execPath, "openinference-langchain.mjs", {
      ...otelExporterEnv(service.url, P),
      SESSION_ID: "lc-session",
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: openAi.baseUrl,
    }),
  ).toEqual({ text: "Sunny in Lyon." });
  calls = await storedCalls<Call>(api, P, 3);
});
afterAll(() => openAi?.close());

const only = (name: string) => onlyCall(calls, name);
/** A LangChain message as LangChain serializes it. */
const lc = (type: string, kwargs: Record<string, unknown>) => ({ lc: 1, type: "constructor", id: ["langchain_core", "messages", type], kwargs });
const promptMessages = [
  lc("SystemMessage", { content: "Answer briefly.", additional_kwargs: {}, response_metadata: {} }),
  lc("HumanMessage", { content: "What is the weather in Lyon?", additional_kwargs: {}, response_metadata: {} }),
];
const answer = lc("AIMessage", {
  id: "chatcmpl-1",
  content: "Sunny in Lyon.",
  additional_kwargs: {},
  response_metadata: {
    tokenUsage: { promptTokens: 21, completionTokens: 5, totalTokens: 26 },
    finish_reason: "stop", model_provider: "openai", model_name: MODEL,
    usage: { prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 },
  },
  type: "ai", tool_calls: [], invalid_tool_calls: [],
  usage_metadata: { output_tokens: 5, input_tokens: 21, total_tokens: 26, input_token_details: {}, output_token_details: {} },
});
// OpenInference's LangChain instrumentation names the model the chat model was asked for (`llm.model_name` = ls_model_name).
const ASKED = "gpt-4o-mini";

describe("OpenInference instrumenting LangChain (ChatOpenAI)", () => {
  it("stores every span as a call, in its tree", () => {
    expect(calls.map((c) => c.op_name).sort()).toEqual(["ChatOpenAI", "ChatPromptTemplate", "RunnableSequence"]);
    const [chain, prompt, chat] = [only("RunnableSequence"), only("ChatPromptTemplate"), only("ChatOpenAI")];
    expect([chain.parent_id, prompt.parent_id, chat.parent_id]).toEqual([null, chain.id, chain.id]);
    expect(new Set(calls.map((c) => c.trace_id))).toEqual(new Set([chain.trace_id]));
    expect([chain, prompt, chat].map((c) => c.attributes["kind"])).toEqual(["CHAIN", "PROMPT", "LLM"]);
    expect(chain.inputs).toEqual({ value: "Lyon" });
    expect(chain.output).toEqual(answer);
    expect(prompt.output).toEqual({ lc: 1, type: "constructor", id: ["langchain_core", "prompt_values", "ChatPromptValue"], kwargs: { messages: promptMessages } });
  });

  it("maps the model call's prompt, answer, model and usage under that model", () => {
    expect(openAi.requests).toEqual([{ model: "gpt-4o-mini", temperature: 0.2, stream: false, messages: [{ role: "system", content: "Answer briefly." }, { role: "user", content: "What is the weather in Lyon?" }] }]);
    const chat = only("ChatOpenAI");
    expect(chat.inputs).toEqual({ messages: [promptMessages] });
    expect(chat.output).toEqual({
      generations: [[{ text: "Sunny in Lyon.", message: answer, generationInfo: { finish_reason: "stop" } }]],
      llmOutput: { tokenUsage: { promptTokens: 21, completionTokens: 5, totalTokens: 26 } },
    });
    const { otel: _otel, ...mapped } = chat.attributes;
    expect(mapped).toEqual({ model: ASKED, kind: "LLM", model_parameters: { model: "gpt-4o-mini", temperature: 0.2, stream: false } });
    expect(chat.summary["usage"]).toEqual({ [ASKED]: { prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 } });
    expect(calls.filter((c) => c.summary["usage"] !== undefined)).toEqual([chat]);
  });

  it("counts the trace's usage once", async () => {
    const [chain, prompt, chat] = [only("RunnableSequence"), only("ChatPromptTemplate"), only("ChatOpenAI")];
    const once = { [ASKED]: { requests: 0, prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 } };
    const byTrace = await api.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: P, filter: { trace_ids: [chain.trace_id] } });
    expect(byTrace.call_usage).toEqual({ [chain.id]: once, [prompt.id]: {}, [chat.id]: once });
    const byCall = await api.json<{ call_usage: Record<string, unknown> }>("/calls/usage", { project_id: P, call_ids: [chain.id] });
    expect(byCall.call_usage).toEqual({ [chain.id]: once });
  });

  it("stores the session (`session.id` on every span) as a thread of one turn", async () => {
    const [chain, prompt, chat] = [only("RunnableSequence"), only("ChatPromptTemplate"), only("ChatOpenAI")];
    expect([chain, prompt, chat].map((c) => [c.thread_id, c.turn_id])).toEqual([["lc-session", chain.id], ["lc-session", null], ["lc-session", null]]);
    const threads = await api.lines<{ thread_id: string; turn_count: number }>("/threads/stream_query", { project_id: P });
    expect(threads.map((t) => [t.thread_id, t.turn_count])).toEqual([["lc-session", 1]]);
  });
});
