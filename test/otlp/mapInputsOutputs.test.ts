import { describe, it, expect } from "vitest";
import { MAX_PARSED_DEPTH } from "../../services/otlp/attributes.js";
import { mapAttributes } from "./support.js";

/** The spec's lists, in priority order (tracing-api.md, "OpenTelemetry export"). */
const INPUT_KEYS = [
  "ai.prompt",
  "gen_ai.prompt",
  "input.value",
  "mlflow.spanInputs",
  "gen_ai.input.messages",
  "pydantic_ai.all_messages",
  "traceloop.entity.input",
  "gcp.vertex.agent.tool_call_args",
  "gcp.vertex.agent.llm_request",
  "input",
  "inputs",
];
const OUTPUT_KEYS = [
  "ai.response",
  "gen_ai.completion",
  "output.value",
  "gen_ai.output.messages",
  "mlflow.spanOutputs",
  "final_result",
  "gen_ai.content.completion",
  "traceloop.entity.output",
  "gcp.vertex.agent.tool_response",
  "gcp.vertex.agent.llm_response",
  "output",
  "outputs",
];

/** Attributes holding every key from `index` on, each with a value naming its key. */
function keysFrom(keys: string[], index: number): Record<string, string> {
  return Object.fromEntries(keys.slice(index).map((key) => [key, `from ${key}`]));
}

describe("mapSpans: inputs", () => {
  it.each(INPUT_KEYS.map((key, index) => [key, index] as const))("takes %s before every later input key", (key, index) => {
    expect(mapAttributes(keysFrom(INPUT_KEYS, index)).start.inputs).toEqual({ value: `from ${key}` });
  });

  it("is {} when no input key is present", () => {
    expect(mapAttributes({ "other.key": "x" }).start.inputs).toEqual({});
  });

  it("parses a JSON object string and uses it as the inputs", () => {
    expect(mapAttributes({ "input.value": '{"question": "why?", "n": 2}' }).start.inputs).toEqual({ question: "why?", n: 2 });
    expect(mapAttributes({ "input.value": '  \n{"a": [1, {"b": null}]}' }).start.inputs).toEqual({ a: [1, { b: null }] });
  });

  it("wraps anything that is not an object as {value}", () => {
    expect(mapAttributes({ "gen_ai.input.messages": '[{"role":"user","content":"hi"}]' }).start.inputs).toEqual({
      value: [{ role: "user", content: "hi" }],
    });
    expect(mapAttributes({ input: "plain text" }).start.inputs).toEqual({ value: "plain text" });
    expect(mapAttributes({ input: "{not json" }).start.inputs).toEqual({ value: "{not json" });
    expect(mapAttributes({ input: '"quoted"' }).start.inputs).toEqual({ value: '"quoted"' });
    expect(mapAttributes({ input: 42 }).start.inputs).toEqual({ value: 42 });
    expect(mapAttributes({ input: ["a", "b"] }).start.inputs).toEqual({ value: ["a", "b"] });
  });

  it(`keeps JSON nested deeper than ${MAX_PARSED_DEPTH} levels as the string`, () => {
    const ok = "[".repeat(MAX_PARSED_DEPTH) + "]".repeat(MAX_PARSED_DEPTH);
    const tooDeep = "[".repeat(100_000) + "]".repeat(100_000);
    expect(JSON.stringify(mapAttributes({ input: ok }).start.inputs)).toBe(`{"value":${ok}}`);
    expect(mapAttributes({ input: tooDeep }).start.inputs).toEqual({ value: tooDeep });
  });

  it("uses an object value (kvlist) as it is", () => {
    expect(mapAttributes({ inputs: { city: "Paris" } }).start.inputs).toEqual({ city: "Paris" });
  });

  it("skips null (empty) values", () => {
    expect(mapAttributes({ "ai.prompt": null, "input.value": "second" }).start.inputs).toEqual({ value: "second" });
  });

  it("reads a flattened family such as gen_ai.prompt.0.role / .content", () => {
    const inputs = mapAttributes({
      "gen_ai.prompt.0.role": "system",
      "gen_ai.prompt.0.content": "Be brief.",
      "gen_ai.prompt.1.role": "user",
      "gen_ai.prompt.1.content": "Hi",
    }).start.inputs;
    expect(inputs).toEqual({ "0": { role: "system", content: "Be brief." }, "1": { role: "user", content: "Hi" } });
  });
});

describe("mapSpans: output", () => {
  it.each(OUTPUT_KEYS.map((key, index) => [key, index] as const))("takes %s before every later output key", (key, index) => {
    expect(mapAttributes(keysFrom(OUTPUT_KEYS, index)).end.output).toBe(`from ${key}`);
  });

  it("is null when no output key is present", () => {
    expect(mapAttributes({ "input.value": "x" }).end.output).toBeNull();
  });

  it("parses JSON-looking strings and keeps any JSON value", () => {
    expect(mapAttributes({ "output.value": '{"answer": 42}' }).end.output).toEqual({ answer: 42 });
    expect(mapAttributes({ "output.value": "[1, 2]" }).end.output).toEqual([1, 2]);
    expect(mapAttributes({ "output.value": "[broken" }).end.output).toBe("[broken");
    expect(mapAttributes({ "output.value": "42" }).end.output).toBe("42");
    expect(mapAttributes({ output: 3.5 }).end.output).toBe(3.5);
    expect(mapAttributes({ output: false }).end.output).toBe(false);
  });

  it("reads a flattened family such as gen_ai.completion.0.content", () => {
    expect(mapAttributes({ "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Hello" }).end.output).toEqual({
      "0": { role: "assistant", content: "Hello" },
    });
  });
});
