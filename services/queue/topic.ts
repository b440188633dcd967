import type { z } from "zod";

/**
 * One stream of messages on the queue: its name, the partition key of a message (messages
 * of one key stay in order, in one partition or lane), and the schema that a message read
 * back from Kafka must satisfy (a message that does not goes to the dead-letter topic).
 *
 * Schemas check the shape of a message as JSON.parse returns it and transform nothing: a
 * message that passes is used as read.
 */
export interface Topic<T> {
  readonly name: string;
  key(message: T): string;
  readonly schema: z.ZodType<T>;
  /**
   * A faster check that accepts exactly the values `schema` accepts, for topics on the hot
   * path; tested to agree with the schema.
   */
  readonly accepts?: (value: unknown) => value is T;
  /**
   * What a reader waits on (a project): `EventPublisher.stored` for some scopes waits only
   * for the messages of those scopes (and what precedes them in the queue).
   */
  readonly readScope?: (message: T) => string;
}

export const deadLetterTopic = (topic: string): string => `${topic}.dead-letter`;

/** The message a queue record holds, or null when it is not JSON or not of the topic's shape. */
export function messageReader<T>(topic: Topic<T>): (text: string) => T | null {
  const accepts = topic.accepts ?? ((value: unknown): value is T => topic.schema.safeParse(value).success);
  return (text) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return null;
    }
    return accepts(value) ? value : null;
  };
}
