// An agent instrumented by hand with the OpenTelemetry JS SDK, exporting over OTLP/gRPC with the
// SDK's own gRPC exporters (@opentelemetry/exporter-trace-otlp-grpc and exporter-logs-otlp-grpc),
// configured only by the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _COMPRESSION):
// two turns of one conversation (`gen_ai.conversation.id` = CONVERSATION), each an agent span over
// a model call, the first also over a tool call and a second model call; the model calls' GenAI
// events as log records of their spans. Prints the spans' ids and every export's result (a
// failure with its gRPC code, message and `grpc-status-details-bin` in base64).
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc";
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-grpc";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { BatchLogRecordProcessor, LoggerProvider } from "@opentelemetry/sdk-logs";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { context, SpanKind, trace } from "@opentelemetry/api";

const conversation = process.env.CONVERSATION ?? "conversation-1";

/** An exporter's results, as the program prints them. */
function recording(exporter, results) {
  const resultOf = (r) => {
    if (r.code === 0) return { code: 0 };
    const details = r.error?.metadata?.get?.("grpc-status-details-bin")?.[0];
    return { code: r.code, grpcCode: r.error?.code ?? null, message: r.error?.details ?? r.error?.message ?? null, statusDetails: details ? Buffer.from(details).toString("base64") : null };
  };
  return {
    export: (items, done) => exporter.export(items, (r) => (results.push(resultOf(r)), done(r))),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush(),
  };
}

const resource = resourceFromAttributes({ "service.name": "travel-agent" });
const traceResults = [];
const logResults = [];
const tracerProvider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(recording(new OTLPTraceExporter(), traceResults), { scheduledDelayMillis: 50 })] });
const loggerProvider = new LoggerProvider({ resource, processors: [new BatchLogRecordProcessor({ exporter: recording(new OTLPLogExporter(), logResults), scheduledDelayMillis: 50 })] });
const tracer = tracerProvider.getTracer("agent.framework", "0.9.0");
const logger = loggerProvider.getLogger("agent.framework", "0.9.0");

const under = (span) => trace.setSpan(context.active(), span);

function chat(parent, question, answer, usage) {
  const span = tracer.startSpan("chat gpt-4o-mini", {
    kind: SpanKind.CLIENT,
    attributes: {
      "gen_ai.operation.name": "chat",
      "gen_ai.system": "openai",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.response.model": "gpt-4o-mini",
      "gen_ai.usage.input_tokens": usage[0],
      "gen_ai.usage.output_tokens": usage[1],
    },
  }, under(parent));
  // The prompt and the answer only as GenAI events (log records of the span, whose context they are emitted in).
  logger.emit({ eventName: "gen_ai.user.message", body: { content: question }, attributes: { "gen_ai.system": "openai" }, context: under(span) });
  logger.emit({ eventName: "gen_ai.choice", body: { index: 0, finish_reason: "stop", message: { content: answer } }, attributes: { "gen_ai.system": "openai" }, context: under(span) });
  span.end();
  return span;
}

function turn(question, answer, withTool) {
  const agent = tracer.startSpan("invoke_agent planner", {
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "planner",
      "gen_ai.conversation.id": conversation,
      "gen_ai.input.messages": JSON.stringify([{ role: "user", content: question }]),
      // The agent span repeats its model calls' usage: counted once.
      "gen_ai.usage.input_tokens": withTool ? 320 : 50,
      "gen_ai.usage.output_tokens": withTool ? 110 : 9,
    },
  });
  const spans = { agent: agent.spanContext().spanId, chats: [] };
  if (withTool) {
    spans.chats.push(chat(agent, question, "call search_trains", [120, 30]).spanContext().spanId);
    const tool = tracer.startSpan("execute_tool search_trains", { attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_trains", "input.value": '{"to":"Lyon"}', "output.value": '{"trains":["TGV 6601"]}' } }, under(agent));
    tool.end();
    spans.tool = tool.spanContext().spanId;
    spans.chats.push(chat(agent, question, answer, [200, 80]).spanContext().spanId);
  } else {
    spans.chats.push(chat(agent, question, answer, [50, 9]).spanContext().spanId);
  }
  agent.setAttribute("gen_ai.output.messages", JSON.stringify([{ role: "assistant", content: answer }]));
  agent.end();
  return { ...spans, trace: agent.spanContext().traceId };
}

const turns = [turn("Trip to Lyon?", "Take TGV 6601.", true), turn("And back?", "TGV 6622 at 18:04.", false)];

// A failed export rejects the flush: the results above tell how it failed.
for (const provider of [tracerProvider, loggerProvider]) {
  await provider.forceFlush().catch(() => {});
  await provider.shutdown().catch(() => {});
}
console.log(JSON.stringify({ turns, traceResults, logResults }));
