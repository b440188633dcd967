/**
 * The OpenTelemetry Node SDK's own logs pipeline, unmodified (test/clients/otel-logs.mjs: the
 * logs API's `emit` inside a span, exported by the SDK configured from OTEL_* variables over
 * OTLP/HTTP protobuf): a model call's span without prompt attributes and its GenAI events; the
 * call shows the events as its inputs and output, and keeps every record.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { untilRead } from "../support/polling.js";
import { basic, KEY_ACME, serviceForFile } from "../support/service.js";

const CLIENT = fileURLToPath(new URL("../clients/otel-logs.mjs", import.meta.url));
const P = "acme/otel-logs-sdk";
const service = serviceForFile();
const api = service.api;

type Call = { id: string; op_name: string; inputs: unknown; output: unknown; summary: Record<string, unknown> };
let ids: { traceId: string; spanId: string };
let call: Call | null = null;

beforeAll(async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [CLIENT], {
    env: {
      PATH: process.env.PATH ?? "",
      OTEL_SERVICE_NAME: "chat-app",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${service.url}/otel/v1/traces`,
      OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${service.url}/otel/v1/logs`,
      OTEL_EXPORTER_OTLP_HEADERS: `Authorization=${encodeURIComponent(basic(KEY_ACME))},project_id=${P}`,
      OTEL_LOGS_EXPORTER: "otlp",
      OTEL_METRICS_EXPORTER: "none",
    },
    timeout: 60_000,
  });
  ids = JSON.parse(stdout.trim().split("\n").at(-1)!);
  call = await untilRead(
    async () => (await api.json<{ call: Call | null }>("/call/read", { project_id: P, id: ids.spanId })).call,
    (read) => read !== null && read.output !== null,
    { timeoutMs: 20_000, everyMs: 100 },
  );
});

describe("OpenTelemetry Node SDK logs: GenAI events of a span", () => {
  it("gives the model call its prompt and answer from the events", () => {
    expect(call).toMatchObject({
      op_name: "chat gpt-4o",
      inputs: { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "2+2?" }] },
      output: { choices: [{ index: 0, finish_reason: "stop", message: { content: "4" } }] },
    });
    expect(call!.summary["usage"]).toEqual({ "gpt-4o": { input_tokens: 12, output_tokens: 1 } });
  });

  it("keeps every record of the span with its call", async () => {
    const { records } = await api.json<{ records: { event_name: string; body: unknown; severity_text: string; scope_name: string; trace_id: string }[] }>("/call/log_records", {
      project_id: P, call_id: ids.spanId,
    });
    expect(records.map((r) => [r.event_name, r.body, r.severity_text, r.scope_name, r.trace_id])).toEqual([
      ["gen_ai.system.message", { content: "Be brief." }, "", "chat-app", ids.traceId],
      ["gen_ai.user.message", { content: "2+2?" }, "", "chat-app", ids.traceId],
      ["gen_ai.choice", { index: 0, finish_reason: "stop", message: { content: "4" } }, "", "chat-app", ids.traceId],
      ["", "answered from cache", "INFO", "chat-app", ids.traceId],
    ]);
  });
});
