import { describe, it, expect } from "vitest";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { JsonTraceSerializer, ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { decodeJsonRequest, decodeProtobufRequest, type OtlpSpanBatch } from "../../services/otlp/decode.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const ROOT_ID = "00f067aa0ba902b7";
const CHILD_ID = "b7ad6b7169203331";

/** Two finished spans from the real OpenTelemetry JS SDK, with ids fixed. */
async function recordSpans(): Promise<ReadableSpan[]> {
  const exporter = new InMemorySpanExporter();
  const spanIds = [ROOT_ID, CHILD_ID];
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": "chat-api", "deployment.environment": "test" }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    idGenerator: { generateTraceId: () => TRACE_ID, generateSpanId: () => spanIds.shift() ?? "ffffffffffffffff" },
  });
  const tracer = provider.getTracer("my.instrumentation", "3.1.4");
  const root = tracer.startSpan("agent run", {
    kind: SpanKind.SERVER,
    startTime: [1_700_000_000, 123_456_789],
    attributes: { "gen_ai.agent.name": "helper", "app.retries": 3, "app.ratio": 0.75, "app.ok": true, "app.tags": ["a", "b"] },
  });
  const child = tracer.startSpan(
    "chat gpt-4o",
    {
      kind: SpanKind.CLIENT,
      startTime: [1_700_000_000, 200_000_001],
      attributes: { "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 12 },
      links: [{ context: root.spanContext(), attributes: { "link.reason": "caused-by" } }],
    },
    trace.setSpan(context.active(), root),
  );
  child.addEvent("gen_ai.choice", { "gen_ai.choice.index": 0 }, [1_700_000_000, 300_000_003]);
  child.setStatus({ code: SpanStatusCode.ERROR, message: "rate limited" });
  child.end([1_700_000_000, 400_000_004]);
  root.end([1_700_000_001, 999_999_999]);
  const spans = exporter.getFinishedSpans();
  await provider.shutdown();
  return spans;
}

function checkBatch(batch: OtlpSpanBatch): void {
  expect(batch.resources).toHaveLength(1);
  const resource = batch.resources[0]!;
  expect(resource.attributes).toEqual({ "service.name": "chat-api", "deployment.environment": "test" });
  expect(resource.scopes).toHaveLength(1);
  const group = resource.scopes[0]!;
  expect(group.scope).toEqual({ name: "my.instrumentation", version: "3.1.4", attributes: {}, droppedAttributesCount: 0 });
  const byId = new Map(group.spans.map((s) => [s.spanId, s]));
  const root = byId.get(ROOT_ID)!;
  const child = byId.get(CHILD_ID)!;

  expect(root).toMatchObject({
    traceId: TRACE_ID,
    spanId: ROOT_ID,
    parentSpanId: "",
    name: "agent run",
    kind: 2,
    startTimeUnixNano: 1_700_000_000_123_456_789n,
    endTimeUnixNano: 1_700_000_001_999_999_999n,
    attributes: { "gen_ai.agent.name": "helper", "app.retries": 3, "app.ratio": 0.75, "app.ok": true, "app.tags": ["a", "b"] },
    events: [],
    links: [],
    status: { code: 0, message: "" },
  });
  expect(child).toMatchObject({
    traceId: TRACE_ID,
    spanId: CHILD_ID,
    parentSpanId: ROOT_ID,
    name: "chat gpt-4o",
    kind: 3,
    startTimeUnixNano: 1_700_000_000_200_000_001n,
    endTimeUnixNano: 1_700_000_000_400_000_004n,
    attributes: { "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 12 },
    events: [{ timeUnixNano: 1_700_000_000_300_000_003n, name: "gen_ai.choice", attributes: { "gen_ai.choice.index": 0 }, droppedAttributesCount: 0 }],
    links: [{ traceId: TRACE_ID, spanId: ROOT_ID, traceState: "", attributes: { "link.reason": "caused-by" }, droppedAttributesCount: 0 }],
    status: { code: 2, message: "rate limited" },
  });
}

describe("bodies from the OpenTelemetry JS serializers", () => {
  it("decodes ProtobufTraceSerializer output: ids, times to the nanosecond, attributes, events, links, status, kind", async () => {
    const body = ProtobufTraceSerializer.serializeRequest(await recordSpans());
    checkBatch(decodeProtobufRequest(Buffer.from(body!)));
  });

  it("decodes JsonTraceSerializer output the same way", async () => {
    const body = JsonTraceSerializer.serializeRequest(await recordSpans());
    checkBatch(decodeJsonRequest(Buffer.from(body!)));
  });

  it("gives the same batch for both encodings of the same spans", async () => {
    const spans = await recordSpans();
    const fromProtobuf = decodeProtobufRequest(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!));
    const fromJson = decodeJsonRequest(Buffer.from(JsonTraceSerializer.serializeRequest(spans)!));
    checkBatch(fromProtobuf);
    expect(fromJson).toEqual(fromProtobuf);
  });
});
