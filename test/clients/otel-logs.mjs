// An application instrumented by hand with the OpenTelemetry Node SDK, configured by the
// standard OTEL_* environment variables (traces and logs exported over OTLP/HTTP): one model
// call as a span, its prompt and answer as GenAI events (the event form of the GenAI
// conventions) emitted through the logs API inside the span. Prints the span's ids.
import { NodeSDK } from "@opentelemetry/sdk-node";
import { context, trace } from "@opentelemetry/api";
import { logs } from "@opentelemetry/api-logs";

const sdk = new NodeSDK();
sdk.start();

const tracer = trace.getTracer("chat-app", "1.0.0");
const logger = logs.getLogger("chat-app", "1.0.0");
const span = tracer.startSpan("chat gpt-4o", {
  attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 1 },
});
context.with(trace.setSpan(context.active(), span), () => {
  logger.emit({ eventName: "gen_ai.system.message", body: { content: "Be brief." }, attributes: { "gen_ai.system": "openai" } });
  logger.emit({ eventName: "gen_ai.user.message", body: { content: "2+2?" }, attributes: { "gen_ai.system": "openai" } });
  logger.emit({ eventName: "gen_ai.choice", body: { index: 0, finish_reason: "stop", message: { content: "4" } }, attributes: { "gen_ai.system": "openai" } });
  logger.emit({ body: "answered from cache", severityText: "INFO", severityNumber: 9 });
});
span.end();

await sdk.shutdown();
console.log(JSON.stringify({ traceId: span.spanContext().traceId, spanId: span.spanContext().spanId }));
