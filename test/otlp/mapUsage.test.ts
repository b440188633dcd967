import { describe, it, expect } from "vitest";
import { mapAttributes } from "./support.js";

describe("mapSpans: usage", () => {
  it("maps GenAI semantic-convention usage under the response model", () => {
    const { end } = mapAttributes({
      "gen_ai.request.model": "gpt-4o",
      "gen_ai.response.model": "gpt-4o-2024-08-06",
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 30,
    });
    expect(end.summary).toEqual({ usage: { "gpt-4o-2024-08-06": { input_tokens: 120, output_tokens: 30 } } });
  });

  it("maps prompt/completion tokens, preferring gen_ai.usage.* over the other sources", () => {
    const { end } = mapAttributes({
      "gen_ai.request.model": "gpt-4o",
      "gen_ai.usage.prompt_tokens": 11,
      "llm.token_count.prompt": 99,
      "gen_ai.usage.completion_tokens": 22,
      "ai.usage.completionTokens": 99,
    });
    expect(end.summary).toEqual({ usage: { "gpt-4o": { prompt_tokens: 11, completion_tokens: 22 } } });
  });

  it("maps OpenInference token counts under llm.model_name", () => {
    const { end } = mapAttributes({
      "llm.model_name": "claude-3-5-sonnet",
      "llm.token_count.prompt": 10,
      "llm.token_count.completion": 5,
      "llm.token_count.total": 15,
    });
    expect(end.summary).toEqual({ usage: { "claude-3-5-sonnet": { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } } });
  });

  it("maps Vercel AI SDK usage under ai.model.id", () => {
    const { end } = mapAttributes({ "ai.model.id": "gpt-4o-mini", "ai.usage.promptTokens": 7, "ai.usage.completionTokens": 3 });
    expect(end.summary).toEqual({ usage: { "gpt-4o-mini": { prompt_tokens: 7, completion_tokens: 3 } } });
  });

  it("prefers llm.usage.total_tokens over llm.token_count.total", () => {
    const { end } = mapAttributes({ "llm.model_name": "m", "llm.usage.total_tokens": 40, "llm.token_count.total": 41 });
    expect(end.summary).toEqual({ usage: { m: { total_tokens: 40 } } });
  });

  it('uses the model "unknown" when no model attribute is present', () => {
    expect(mapAttributes({ "gen_ai.usage.input_tokens": 5 }).end.summary).toEqual({ usage: { unknown: { input_tokens: 5 } } });
  });

  it("reads counts sent as decimal strings and ignores values that are not numbers", () => {
    const { end } = mapAttributes({ "gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": "many" });
    expect(end.summary).toEqual({ usage: { unknown: { input_tokens: 12 } } });
  });

  it("leaves summary {} when the span reports no usage", () => {
    expect(mapAttributes({ "gen_ai.request.model": "gpt-4o" }).end.summary).toEqual({});
  });
});
