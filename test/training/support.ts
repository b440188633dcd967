import { until } from "../support/polling.js";
import { KEY_ACME } from "../support/service.js";

/** The training API's client: Bearer auth, as ART sends it; answers status and parsed body. */
export interface TrainingClient {
  call<T = Record<string, unknown>>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** 200 or throws with the answer. */
  ok<T = Record<string, unknown>>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<T>;
}

export function trainingClient(baseUrl: string, key: string = KEY_ACME): TrainingClient {
  const call = async <T>(method: string, path: string, body?: unknown) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };
  return {
    call,
    async ok<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown) {
      const answer = await call<T>(method, path, body);
      if (answer.status !== 200) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return answer.body;
    },
  };
}

export interface TrainingEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

interface EventsPage {
  data: TrainingEvent[];
  has_more: boolean;
  last_id: string | null;
}

/**
 * Polls a job's events as ART does: pages with `after` = the last id seen until `has_more`
 * is false, again every 200 ms, until `training_ended` or `training_failed`.
 */
export async function eventsUntilEnd(api: TrainingClient, jobId: string, timeoutMs = 240_000): Promise<TrainingEvent[]> {
  const seen: TrainingEvent[] = [];
  /** Reads the pages after the last event seen; answers every event once the job ended. */
  const readNew = async (): Promise<TrainingEvent[] | null> => {
    for (;;) {
      const after = seen.length > 0 ? `?after=${seen[seen.length - 1]!.id}` : "";
      const page = await api.ok<EventsPage>("GET", `/v1/preview/training-jobs/${jobId}/events${after}`);
      seen.push(...page.data);
      if (seen.some((e) => e.type === "training_ended" || e.type === "training_failed")) return seen;
      if (!page.has_more) return null;
    }
  };
  return until(readNew, { timeoutMs, everyMs: 200, what: () => `job ${jobId} to end; events: ${JSON.stringify(seen.map((e) => e.type))}` });
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
