import { describe, it, expect } from "vitest";
import { mapSpans } from "../../services/otlp/mapSpan.js";
import { batchOf, CTX, makeSpan, mapAttributes } from "./support.js";

const SCOPE = { name: "openinference.instrumentation.openai", version: "0.1.2" };

describe("mapSpans: attributes", () => {
  it.each([
    ["model", "gen_ai.response.model"],
    ["model", "gen_ai.request.model"],
    ["model", "llm.model_name"],
    ["model", "ai.model.id"],
    ["provider", "llm.provider"],
    ["provider", "ai.model.provider"],
    ["system", "gen_ai.system"],
    ["system", "llm.system"],
    ["kind", "weave.span.kind"],
    ["kind", "traceloop.span.kind"],
    ["kind", "openinference.span.kind"],
    ["operation", "gen_ai.operation.name"],
    ["agent", "gen_ai.agent.name"],
  ])("maps %s from %s", (family, key) => {
    expect(mapAttributes({ [key]: "v" }).start.attributes[family]).toBe("v");
  });

  it("takes each family from its first present key", () => {
    const { attributes } = mapAttributes({
      "gen_ai.request.model": "gpt-4o",
      "gen_ai.response.model": "gpt-4o-2024-08-06",
      "ai.model.provider": "openai.chat",
      "llm.provider": "openai",
      "llm.system": "x",
      "gen_ai.system": "openai",
      "openinference.span.kind": "LLM",
      "weave.span.kind": "llm",
    }).start;
    expect(attributes).toMatchObject({ model: "gpt-4o-2024-08-06", provider: "openai", system: "openai", kind: "llm" });
  });

  it("collects model_parameters from gen_ai.request.* (without the model) over llm.invocation_parameters", () => {
    const { attributes } = mapAttributes({
      "gen_ai.request.model": "gpt-4o",
      "gen_ai.request.temperature": 0.2,
      "gen_ai.request.max_tokens": 256,
      "gen_ai.request.stop_sequences": ["\n"],
      "llm.invocation_parameters": '{"temperature": 0.9, "top_p": 0.5}',
    }).start;
    expect(attributes["model_parameters"]).toEqual({ temperature: 0.2, top_p: 0.5, max_tokens: 256, stop_sequences: ["\n"] });
  });

  it("keeps llm.invocation_parameters that are not a JSON object under invocation_parameters", () => {
    expect(mapAttributes({ "llm.invocation_parameters": "fast" }).start.attributes["model_parameters"]).toEqual({
      invocation_parameters: "fast",
    });
  });

  it("lays out the call attributes as the mapped families plus otel.{attributes, resource, scope}", () => {
    const span = makeSpan({
      attributes: {
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.request.temperature": 0.7,
        "gen_ai.operation.name": "chat",
        "gen_ai.agent.name": "helper",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Hi",
        "llm.output_messages.0.message.content": "Hello",
        plain: 1,
      },
    });
    const [start] = mapSpans(batchOf([span], { "service.name": "chat-api", "service.version": "1.0" }), CTX).events;
    expect(start?.kind === "call_complete" && start.attributes).toEqual({
      model: "gpt-4o",
      system: "openai",
      operation: "chat",
      agent: "helper",
      model_parameters: { temperature: 0.7 },
      otel: {
        attributes: {
          gen_ai: { system: "openai", request: { model: "gpt-4o", temperature: 0.7 }, operation: { name: "chat" }, agent: { name: "helper" } },
          llm: {
            input_messages: { "0": { message: { role: "user", content: "Hi" } } },
            output_messages: { "0": { message: { content: "Hello" } } },
          },
          plain: 1,
        },
        resource: { service: { name: "chat-api", version: "1.0" } },
        scope: SCOPE,
      },
    });
  });

  it("keeps all span attributes under otel.attributes when no family matched", () => {
    expect(mapAttributes({ "http.method": "GET", "http.status_code": 200 }).start.attributes).toEqual({
      otel: { attributes: { http: { method: "GET", status_code: 200 } }, resource: {}, scope: SCOPE },
    });
  });

  it("keeps a key whose prefix is itself a value, as the rest of its dotted key", () => {
    expect(mapAttributes({ "a.b": 1, "a.b.c": 2 }).start.attributes["otel"]).toMatchObject({ attributes: { a: { b: 1, "b.c": 2 } } });
  });
});
