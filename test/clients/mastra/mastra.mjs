// A Mastra 1.x user's program: an agent whose model is the AI SDK's own test model (ai/test),
// answering what an OpenAI model would, and Mastra's OpenTelemetry exporter with its "custom"
// provider pointed at our endpoint (OTLP_ENDPOINT, OTLP_AUTHORIZATION, OTLP_PROJECT). Mastra needs
// Node >= 22. It posts traces to the endpoint and logs beside it (/otel/v1/logs). Prints the answer.
import { Mastra } from "@mastra/core/mastra";
import { Agent } from "@mastra/core/agent";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { MockLanguageModelV4 } from "ai/test";

const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const model = new MockLanguageModelV4({
  provider: "openai.chat",
  modelId: "gpt-4o-mini",
  doGenerate: [{ content: [{ type: "text", text: "Sunny in Lyon." }], finishReason: { unified: "stop", raw: "stop" }, usage: usage(25, 5), warnings: [], response: { id: "r1", modelId: "gpt-4o-mini-2024-07-18", timestamp: new Date("2026-01-05T10:00:00Z") } }],
  doStream: undefined,
});
const mastra = new Mastra({
  agents: { weather: new Agent({ id: "weather", name: "weather", instructions: "Answer briefly.", model }) },
  observability: new Observability({
    configs: {
      otel: {
        serviceName: "mastra-app",
        exporters: [new OtelExporter({ provider: { custom: { endpoint: process.env.OTLP_ENDPOINT, protocol: "http/protobuf", headers: { Authorization: process.env.OTLP_AUTHORIZATION, project_id: process.env.OTLP_PROJECT } } } })],
      },
    },
  }),
});
const result = await mastra.getAgent("weather").generate("What is the weather in Lyon?");
await mastra.shutdown();
console.log(JSON.stringify({ text: result.text }));
