// An OpenInference user's program: the OpenTelemetry Node SDK configured by the standard
// OTEL_* environment variables, OpenInference's OpenAI instrumentation registered on it (and
// applied to the OpenAI module by `manuallyInstrument`, OpenInference's documented way for ES
// modules), one agent function (openinference-core's `traceAgent`) asking the OpenAI chat
// completions API once, inside a session (`setSession`, OpenInference's `session.id`). The
// OpenAI SDK reaches the server at OPENAI_BASE_URL. Prints the answer as one JSON line.
import { NodeSDK } from "@opentelemetry/sdk-node";
import { context } from "@opentelemetry/api";
import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import { setSession, traceAgent } from "@arizeai/openinference-core";
import OpenAI from "openai";

const instrumentation = new OpenAIInstrumentation();
instrumentation.manuallyInstrument(OpenAI);
const sdk = new NodeSDK({ instrumentations: [instrumentation] });
sdk.start();

const openai = new OpenAI();
const answer = traceAgent(
  async (question) => {
    const completion = await openai.chat.completions.create({
      model: "gpt-4o-mini",
      temperature: 0.2,
      messages: [
        { role: "system", content: "Answer briefly." },
        { role: "user", content: question },
      ],
    });
    return completion.choices[0].message.content;
  },
  { name: "weather-agent" },
);

const text = await context.with(setSession(context.active(), { sessionId: process.env.SESSION_ID ?? "" }), () => answer("What is the weather in Lyon?"));
await sdk.shutdown();
console.log(JSON.stringify({ text }));
