import pino, { type Logger } from "pino";

/** Longest a line waits in the buffer. */
const FLUSH_MS = 100;

/**
 * The process's log: pino's JSON lines on stdout, buffered and written asynchronously: out
 * once 8 KB are queued, or at the latest `FLUSH_MS` after a line (so a lone line at low
 * traffic shows within that). The request thread never waits on stdout (a slow reader, a
 * pipe to a log collector or a terminal, no longer shows in the answers' tail latency), and
 * a busy second costs a few dozen writes instead of one per request line. What is queued is
 * written out synchronously when the process exits; a SIGKILL loses at most the last
 * `FLUSH_MS` of lines.
 */
export function stdoutLogger(level: string): Logger {
  const stdout = pino.destination({ dest: 1, sync: false, minLength: 8192, periodicFlush: FLUSH_MS });
  process.once("exit", () => {
    try {
      stdout.flushSync();
    } catch {
      // stdout closed, or a write still in flight: what it holds is lost with the process
    }
  });
  return pino({ level }, stdout);
}
