/**
 * Langfuse 5 (`langfuse.observation.*`, `langfuse.trace.*`) and Mastra (`mastra.<span type>.input`)
 * attributes mapped to the call's fields. The attribute values are the forms the clients send:
 * Langfuse serializes every object to JSON text and flattens metadata to one key per entry.
 */
import { describe, expect, it } from "vitest";
import { mapSpans } from "../../services/otlp/mapSpan.js";
import type { JsonValue } from "../../services/json.js";
import { batchOf, CTX, makeSpan, mapAttributes } from "./support.js";

const LANGFUSE_GENERATION = {
  "langfuse.observation.type": "generation",
  "langfuse.observation.input": '[{"role":"user","content":"2+2?"}]',
  "langfuse.observation.output": '{"role":"assistant","content":"4"}',
  "langfuse.observation.model.name": "gpt-4o-mini",
  "langfuse.observation.model.parameters": '{"temperature":0.2,"max_tokens":64}',
  "langfuse.observation.usage_details": '{"input":31,"output":7,"total":38,"input_cached_tokens":4}',
  "langfuse.observation.cost_details": '{"input":0.0001,"output":0.0002,"total":0.0003}',
  "langfuse.observation.metadata.step": "answer",
  "langfuse.trace.name": "support chat",
  "langfuse.trace.tags": ["beta", "eu"],
  "langfuse.trace.metadata.tenant": "t-1",
  "session.id": "conv-9",
};

describe("mapSpans: Langfuse 5", () => {
  it("maps a generation's input, output, model, parameters, usage under the model and attributes", () => {
    const { call } = mapAttributes(LANGFUSE_GENERATION, { name: "llm-call", parentSpanId: "00f067aa0ba902b7" });
    expect(call.inputs).toEqual({ value: [{ role: "user", content: "2+2?" }] });
    expect(call.output).toEqual({ role: "assistant", content: "4" });
    expect(call.summary).toEqual({ usage: { "gpt-4o-mini": { input_tokens: 31, output_tokens: 7, total_tokens: 38, input_cached_tokens: 4 } } });
    expect(call.thread_id).toBe("conv-9");
    const { otel: _otel, ...mapped } = call.attributes as Record<string, unknown>;
    expect(mapped).toEqual({
      model: "gpt-4o-mini",
      kind: "generation",
      trace_name: "support chat",
      model_parameters: { temperature: 0.2, max_tokens: 64 },
      tags: ["beta", "eu"],
      metadata: { tenant: "t-1", step: "answer" },
      cost_details: { input: 0.0001, output: 0.0002, total: 0.0003 },
    });
  });

  it("gives the gen_ai usage attributes precedence, field by field", () => {
    const { call } = mapAttributes({ ...LANGFUSE_GENERATION, "gen_ai.usage.input_tokens": 30 });
    expect(call.summary).toEqual({ usage: { "gpt-4o-mini": { input_tokens: 30, output_tokens: 7, total_tokens: 38, input_cached_tokens: 4 } } });
  });

  it("keeps OpenAI-style usage names as sent", () => {
    const { call } = mapAttributes({ "langfuse.observation.model.name": "m", "langfuse.observation.usage_details": '{"prompt_tokens":3,"completion_tokens":2}' });
    expect(call.summary).toEqual({ usage: { m: { prompt_tokens: 3, completion_tokens: 2 } } });
  });

  it("takes the trace's input and output when the span has none of its own", () => {
    const { call } = mapAttributes({ "langfuse.observation.type": "span", "langfuse.trace.input": '{"question":"2+2?"}', "langfuse.trace.output": "4" });
    expect(call.inputs).toEqual({ question: "2+2?" });
    expect(call.output).toBe("4");
  });

  it("prefers the span's own input and output to the trace's", () => {
    const { call } = mapAttributes({
      "langfuse.observation.input": '{"q":"own"}',
      "langfuse.observation.output": "own answer",
      "langfuse.trace.input": '{"q":"trace"}',
      "langfuse.trace.output": "trace answer",
    });
    expect({ inputs: call.inputs, output: call.output }).toEqual({ inputs: { q: "own" }, output: "own answer" });
  });

  it("leaves usage out when usage_details is not an object of numbers", () => {
    expect(mapAttributes({ "langfuse.observation.usage_details": "n/a" }).call.summary).toEqual({});
    expect(mapAttributes({ "langfuse.observation.usage_details": '{"input":"many"}' }).call.summary).toEqual({});
  });
});

describe("mapSpans: Mastra", () => {
  it("maps mastra.<span type>.input and .output to inputs and output", () => {
    const { call } = mapAttributes({
      "gen_ai.operation.name": "model_step",
      "mastra.span.type": "model_step",
      "mastra.model_step.input": '{"messages":[{"role":"user","content":"hi"}]}',
      "mastra.model_step.output": '{"text":"hello"}',
    });
    expect(call.inputs).toEqual({ messages: [{ role: "user", content: "hi" }] });
    expect(call.output).toEqual({ text: "hello" });
  });

  it("keeps text inputs under value", () => {
    const { call } = mapAttributes({ "mastra.span.type": "agent_run", "mastra.agent_run.input": "plan a trip" });
    expect(call.inputs).toEqual({ value: "plan a trip" });
    expect(call.output).toBeNull();
  });

  it("prefers gen_ai.input.messages to Mastra's input", () => {
    const { call } = mapAttributes({ "gen_ai.input.messages": '[{"role":"user","parts":[]}]', "mastra.model_generation.input": "other" });
    expect(call.inputs).toEqual({ value: [{ role: "user", parts: [] }] });
  });

  it("does not take other mastra.* keys", () => {
    const { call } = mapAttributes({ "mastra.agent_run.max_steps": 5, "mastra.span.type": "agent_run" });
    expect(call.inputs).toEqual({});
  });
});

describe("mapSpans: a model call without input takes its Mastra step's", () => {
  const STEP = "1111111111111111";
  const PROMPT = '[{"role":"user","content":"hi"}]';
  const mapped = (child: Record<string, JsonValue>, parentId = STEP) => {
    const step = makeSpan({ spanId: STEP, name: "agent_step weather", attributes: { "gen_ai.operation.name": "agent_step", "mastra.model_step.input": PROMPT } });
    const call = makeSpan({ spanId: "2222222222222222", parentSpanId: parentId, name: "chat gpt-4o-mini", attributes: child });
    // The child first: the step may come anywhere in the export.
    return mapSpans(batchOf([call, step]), CTX).events.find((e) => e.id === "2222222222222222")!;
  };

  it("fills a chat span's empty inputs from its parent step in the same export", () => {
    expect(mapped({ "gen_ai.operation.name": "chat" }).inputs).toEqual({ value: [{ role: "user", content: "hi" }] });
  });

  it("keeps a chat span's own input", () => {
    expect(mapped({ "gen_ai.operation.name": "chat", "gen_ai.input.messages": '[{"role":"user","content":"own"}]' }).inputs).toEqual({ value: [{ role: "user", content: "own" }] });
  });

  it("fills only model calls, and only from the span's own parent", () => {
    expect(mapped({ "gen_ai.operation.name": "model_chunk" }).inputs).toEqual({});
    expect(mapped({ "gen_ai.operation.name": "chat" }, "3333333333333333").inputs).toEqual({});
  });
});
