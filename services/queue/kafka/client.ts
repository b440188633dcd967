import { Kafka, logLevel, type LogEntry } from "kafkajs";
import type { Logger } from "pino";

/**
 * The Kafka side of the queue: the only folder that knows KafkaJS (in maintenance mode; kept
 * small so the client can be swapped). One publisher (publisher.ts) or consumer (consumer.ts)
 * serves one topic; each topic's consumers form their own group; groupOffsets.ts reads the
 * group's progress (read-your-writes, the lag bound).
 */
export interface KafkaSettings {
  readonly brokers: readonly string[];
  readonly groupId: string;
  readonly clientId: string;
  /**
   * Longest a publish waits for the broker's acknowledgement (queued behind other sends
   * included) before it is refused as retryable (503 + Retry-After): a broker gone or hung
   * must not hold requests open for KafkaJS's own retries and request timeouts.
   */
  readonly sendTimeoutMs?: number;
  /** Where KafkaJS's own lines go (group joins, rebalances, connection errors), at the logger's level. */
  readonly log?: Logger;
}

/**
 * KafkaJS's levels by pino's. KafkaJS logs at info what an operator wants (joins, assignments),
 * and at error every protocol error it then retries (a heartbeat refused during a rebalance):
 * those come out as warnings; what it gives up on, the consumer logs as an error itself.
 */
function kafkaLogLevel(log: Logger | undefined): logLevel {
  if (!log) return logLevel.NOTHING;
  const level = log.levelVal;
  if (level <= 20) return logLevel.DEBUG;
  if (level <= 30) return logLevel.INFO;
  return level <= 40 ? logLevel.WARN : logLevel.NOTHING;
}

function kafkaLogCreator(log: Logger | undefined) {
  return () =>
    ({ namespace, level, log: { message, timestamp: _timestamp, logger: _logger, ...fields } }: LogEntry) => {
      const line = { kafkajs: namespace, ...fields };
      if (level === logLevel.ERROR || level === logLevel.WARN) log?.warn(line, message);
      else if (level === logLevel.INFO) log?.info(line, message);
      else log?.debug(line, message);
    };
}

export function kafkaClient(settings: KafkaSettings): Kafka {
  return new Kafka({
    clientId: settings.clientId,
    brokers: [...settings.brokers],
    logLevel: kafkaLogLevel(settings.log),
    logCreator: kafkaLogCreator(settings.log),
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
