// A Vercel AI SDK 6 user's program: the OpenTelemetry Node SDK configured by the standard
// OTEL_* environment variables and one generateText call of two steps (a tool call, then the
// answer) with the SDK's telemetry enabled (`experimental_telemetry`, AI SDK 6's own
// OpenTelemetry spans on the global tracer), its metadata carrying the user's session id. The
// model is the AI SDK's own test model (ai/test), answering what an OpenAI model would. `ai6`
// is npm's alias of `ai@6` (test/clients/package.json holds AI SDK 7 as `ai`). Prints the
// answer as one JSON line.
import { NodeSDK } from "@opentelemetry/sdk-node";
import { generateText, jsonSchema, stepCountIs, tool } from "ai6";
import { MockLanguageModelV3 } from "ai6/test";

const sdk = new NodeSDK();
sdk.start();

const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const response = (id) => ({ id, modelId: "gpt-4o-mini-2024-07-18", timestamp: new Date("2026-01-05T10:00:00Z") });
const model = new MockLanguageModelV3({
  provider: "openai.chat",
  modelId: "gpt-4o-mini",
  doGenerate: [
    {
      content: [{ type: "tool-call", toolCallId: "call-1", toolName: "weather", input: JSON.stringify({ city: "Lyon" }) }],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage: usage(40, 10),
      warnings: [],
      response: response("resp-1"),
    },
    {
      content: [{ type: "text", text: "Sunny in Lyon." }],
      finishReason: { unified: "stop", raw: "stop" },
      usage: usage(22, 12),
      warnings: [],
      response: response("resp-2"),
    },
  ],
});

const result = await generateText({
  model,
  prompt: "What is the weather in Lyon?",
  tools: {
    weather: tool({
      description: "The weather in a city",
      inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
      execute: async ({ city }) => ({ city, sky: "sunny" }),
    }),
  },
  stopWhen: stepCountIs(3),
  experimental_telemetry: { isEnabled: true, functionId: "weather-agent", metadata: { sessionId: process.env.SESSION_ID ?? "" } },
});

await sdk.shutdown();
console.log(JSON.stringify({ text: result.text }));
