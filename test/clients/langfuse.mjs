// A Langfuse 5 user's program, as Langfuse's docs write it: the OpenTelemetry Node SDK with
// Langfuse's span processor, configured only by LANGFUSE_BASE_URL / LANGFUSE_PUBLIC_KEY /
// LANGFUSE_SECRET_KEY. An agent observation with one generation inside, under propagated trace
// attributes. Prints the ids it made as one JSON line.
import { NodeSDK } from "@opentelemetry/sdk-node";
import { LangfuseSpanProcessor } from "@langfuse/otel";
import { propagateAttributes, startActiveObservation } from "@langfuse/tracing";

const sdk = new NodeSDK({ spanProcessors: [new LangfuseSpanProcessor()] });
sdk.start();

const ids = await propagateAttributes(
  { sessionId: process.env.SESSION_ID ?? "session-1", traceName: "support chat", tags: ["beta", "eu"], metadata: { tenant: "t-1" } },
  () =>
    startActiveObservation(
      "answer-question",
      async (agent) => {
        agent.update({ input: { question: "2+2?" } });
        const generation = agent.startObservation(
          "llm-call",
          { model: "gpt-4o-mini", input: [{ role: "user", content: "2+2?" }], modelParameters: { temperature: 0.2 } },
          { asType: "generation" },
        );
        generation.update({ output: { role: "assistant", content: "4" }, usageDetails: { input: 31, output: 7, total: 38 } });
        generation.end();
        agent.update({ output: "4" });
        return { traceId: agent.traceId, agentId: agent.id, generationId: generation.id };
      },
      { asType: "agent" },
    ),
);

await sdk.shutdown();
console.log(JSON.stringify(ids));
