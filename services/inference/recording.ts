import type { Logger } from "pino";
import type { ChatCompletion } from "../contract/chat.js";
import { toCompleteEvent } from "../ingest/callEvents.js";
import { uuidv7 } from "../ids.js";
import type { JsonObject } from "../json.js";
import type { TraceEvent } from "../queue/events.js";
import type { EventPublisher } from "../queue/queue.js";
import { microsToIso } from "../times.js";

/** The op name the OpenAI integrations of the Weave SDKs give a chat completion. */
export const CHAT_OP_NAME = "openai.chat.completions.create";

export interface ServedCompletion {
  readonly projectId: string;
  readonly username: string;
  /** The request body as the client sent it. */
  readonly request: JsonObject;
  readonly response: ChatCompletion;
  readonly startedAtMicros: number;
  readonly endedAtMicros: number;
  /** `local` (the built-in models) or `upstream` (forwarded). */
  readonly servedBy: "local" | "upstream";
}

/**
 * Each completion becomes one finished call in the project the request named, written as
 * ingest writes `calls/complete` (the same event, the same queue): its usage under
 * `summary.usage[<model>]`, which /calls/usage, /calls/stats and the costs count.
 */
export class CompletionRecorder {
  constructor(
    private readonly publisher: EventPublisher<TraceEvent>,
    private readonly log: Logger,
  ) {}

  /** Resolves once the call is durable; a failure is logged, never answered to the client (it has its completion). */
  async record(served: ServedCompletion): Promise<void> {
    const { response } = served;
    const startedAt = microsToIso(served.startedAtMicros);
    const event = toCompleteEvent(
      {
        project_id: served.projectId,
        id: uuidv7(),
        trace_id: uuidv7(),
        op_name: CHAT_OP_NAME,
        started_at: startedAt,
        ended_at: microsToIso(Math.max(served.endedAtMicros, served.startedAtMicros)),
        attributes: { inference: { served_by: served.servedBy, completion_id: response.id } },
        inputs: served.request,
        output: response,
        summary: { usage: { [response.model]: { requests: 1, ...response.usage } } },
      },
      served.username,
    );
    try {
      await this.publisher.publish([event]);
    } catch (err) {
      this.log.warn({ err, project_id: served.projectId, completion_id: response.id }, "could not record a chat completion as a call");
    }
  }
}
