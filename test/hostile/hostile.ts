import type { Operation } from "../../services/contract/operation.js";
import { formOf, type OperationRequest, PROJECT_REQUESTS, KEY_ONLY_BODIES } from "../http/operationRequests.js";
import { basic } from "../support/service.js";

/** Longest a hostile request may take before the test calls it a hang. */
export const REQUEST_TIMEOUT_MS = 30_000;

export interface Answer {
  readonly status: number;
  readonly text: string;
}

export interface HostileRequest {
  /** Path with its query string; the operation's own (or its row's) when absent. */
  readonly path?: string;
  /** Raw body bytes or text; nothing for none. */
  readonly body?: string | Uint8Array | FormData;
  readonly headers?: Record<string, string>;
  /** A key, or null for no Authorization header. */
  readonly key: string | null;
}

/** Sends one request and reads the whole answer, failing the test if it takes longer than REQUEST_TIMEOUT_MS. */
export async function send(url: string, op: Operation, request: HostileRequest): Promise<Answer> {
  const body = request.body instanceof Uint8Array ? new Uint8Array(request.body) : request.body;
  const res = await fetch(`${url}${request.path ?? op.path}`, {
    method: op.method.toUpperCase(),
    headers: {
      ...(request.key === null ? {} : { authorization: basic(request.key) }),
      ...(body instanceof FormData ? {} : { "content-type": "application/json" }),
      ...request.headers,
    },
    body: op.method === "get" ? undefined : body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: res.status, text: await res.text() };
}

/** The row of the shared table for an operation (key-only operations: their body only). */
export function rowOf(op: Operation): OperationRequest {
  const row = PROJECT_REQUESTS[op.id];
  if (row) return row;
  const body = KEY_ONLY_BODIES[op.id];
  return body === undefined ? {} : { body };
}

/** The row's request as it is sent: its path filled, its JSON body or form. */
export function validRequest(op: Operation, fill: (text: string) => string = (t) => t): { path: string; body?: string | FormData; headers?: Record<string, string> } {
  const row = rowOf(op);
  const body = row.form ? formOf(row.form) : row.body === undefined ? undefined : fill(JSON.stringify(row.body));
  return { path: fill(row.path ?? op.path), body, headers: row.headers };
}

/** The message a refusal carries: `message` of the `{detail, message}` body, or an OpenAI-style `error.message`. */
export function messageOf(text: string): string | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof body !== "object" || body === null) return null;
  const record = body as { message?: unknown; detail?: unknown; error?: { message?: unknown } };
  if (typeof record.message === "string" && record.detail !== undefined) return record.message;
  if (typeof record.error?.message === "string") return record.error.message;
  if (typeof record.message === "string") return record.message; // OTLP's google.rpc.Status
  return null;
}

/** What is wrong with an answer to a hostile request: a 5xx, or a 4xx that does not say why; null when it is fine. */
export function faultOf(op: Operation, what: string, answer: Answer): string | null {
  if (answer.status >= 500) return `${op.id} (${what}): ${answer.status} ${answer.text.slice(0, 200)}`;
  if (answer.status >= 400 && messageOf(answer.text) === null) return `${op.id} (${what}): ${answer.status} without a message: ${answer.text.slice(0, 200)}`;
  return null;
}

/** Collects the faults of many answers, to report them all at once. */
export class Faults {
  readonly found: string[] = [];
  check(op: Operation, what: string, answer: Answer): void {
    const fault = faultOf(op, what, answer);
    if (fault !== null) this.found.push(fault);
  }
}
