import { appendFile, open } from "node:fs/promises";

/**
 * Appends messages the store refused, one JSON line each (`at`, `error`, `message`), to the
 * log's dead-letter file, synced: set aside for a person to look at, never silently dropped.
 */
export async function appendDeadLetters(path: string, messages: readonly unknown[], error: string): Promise<void> {
  const at = new Date().toISOString();
  await appendFile(path, messages.map((message) => `${JSON.stringify({ at, error, message })}\n`).join(""));
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
