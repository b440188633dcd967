import { Gauge } from "prom-client";
import { QueueFullError } from "../errors.js";

export interface PendingLimits {
  /** Most events accepted and not yet durable. */
  readonly maxPendingEvents: number;
  /** Most request bytes (the bodies the events came from) accepted and not yet durable. */
  readonly maxPendingBytes: number;
}

const pendingEventsGauge = new Gauge({ name: "ingest_pending_events", help: "Messages accepted and not yet durable, by topic", labelNames: ["topic"] });
const pendingBytesGauge = new Gauge({ name: "ingest_pending_bytes", help: "Request bytes whose messages are not yet durable, by topic", labelNames: ["topic"] });

/**
 * The memory bound of a publisher: what was accepted and is not durable yet, counted in
 * events and in the bytes of the requests they came from (a span with its LLM messages
 * can weigh many times a call end, so a count alone does not bound memory). Beyond either
 * limit a publish is refused at once (429 with Retry-After); a request alone is always
 * admitted, so one larger than the byte limit is not refused forever.
 */
export class PendingBound {
  private events = 0;
  private bytes = 0;

  constructor(
    private readonly limits: PendingLimits,
    private readonly topic: string,
  ) {}

  /** Reserves room, or throws QueueFullError. Pair with `release`. */
  admit(events: number, bytes: number): void {
    const idle = this.events === 0 && this.bytes === 0;
    if (!idle && (this.events + events > this.limits.maxPendingEvents || this.bytes + bytes > this.limits.maxPendingBytes)) {
      throw new QueueFullError("ingest buffer full", 1);
    }
    this.move(events, bytes);
  }

  release(events: number, bytes: number): void {
    this.move(-events, -bytes);
  }

  private move(events: number, bytes: number): void {
    this.events += events;
    this.bytes += bytes;
    pendingEventsGauge.set({ topic: this.topic }, this.events);
    pendingBytesGauge.set({ topic: this.topic }, this.bytes);
  }
}
