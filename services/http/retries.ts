/**
 * `X-Weave-Retry-Id`: the Weave SDKs send one value on every attempt of one logical request
 * (the first included). An operation declares what a repeat gets (contract/operation.ts,
 * `retries`); this module keeps the answers.
 *
 * - Every process remembers the answers of its recent retried requests (a bounded map, oldest
 *   forgotten first) and joins a repeat that arrives while the first attempt still runs, so a
 *   repeat to the same process costs one map lookup and applies nothing.
 * - `recorded` operations also keep the answer in ClickHouse (`request_retries`), read when
 *   the process does not remember it: a repeat that reaches another process (a restart, a
 *   load balancer) gets the first answer too. Looking up and recording are not one atomic
 *   step: two attempts running at the same moment in two processes can both apply (the
 *   client sends the next attempt only after the previous one failed or timed out).
 * - Only answers of applied requests are kept: after an error a repeat applies again.
 *
 * Requests without the header, and operations without `retries`, never come here: the hot
 * path (ingest without the header) pays one header lookup.
 */

export interface RetryKey {
  readonly retryId: string;
  /** The operation's id. */
  readonly route: string;
  /** The projects the request named (its scope), sorted, one per line. */
  readonly projects: string;
}

/** Answers kept where every process finds them (store/retries/retriesRepository.ts). */
export interface RecordedAnswers {
  find(key: RetryKey): Promise<string | null>;
  record(key: RetryKey, answer: string): Promise<void>;
}

export interface RetryMemoryLimits {
  readonly entries: number;
  /** Bytes of keys and answers held; an answer larger than a quarter of it is not remembered. */
  readonly bytes: number;
}

const DEFAULT_LIMITS: RetryMemoryLimits = { entries: 10_000, bytes: 16 * 1024 * 1024 };

export const RETRY_ID_HEADER = "x-weave-retry-id";

export function retryKey(retryId: string, route: string, projects: readonly string[]): RetryKey {
  return { retryId, route, projects: [...new Set(projects)].sort().join("\n") };
}

const memoryKey = (key: RetryKey): string => `${key.route}\n${key.projects}\n${key.retryId}`;

export class RetryAnswers {
  private readonly recent = new Map<string, string>();
  private readonly running = new Map<string, Promise<string | undefined>>();
  private heldBytes = 0;

  constructor(
    private readonly recorded: RecordedAnswers | null,
    private readonly onRecordFailed: (err: unknown) => void = () => {},
    private readonly limits: RetryMemoryLimits = DEFAULT_LIMITS,
  ) {}

  /** Whether `recorded` operations can be served (a store to record in was given). */
  get records(): boolean {
    return this.recorded !== null;
  }

  /**
   * The answer (JSON text) to the request under `key`: one remembered or recorded, else
   * `apply`'s, which is then kept. `undefined` when the handler answered by itself.
   */
  async answer(key: RetryKey, recorded: boolean, apply: () => Promise<string | undefined>): Promise<string | undefined> {
    const id = memoryKey(key);
    const known = this.recent.get(id);
    if (known !== undefined) return known;
    const running = this.running.get(id);
    if (running) return running;
    const attempt = this.resolve(key, recorded, apply);
    this.running.set(id, attempt);
    try {
      const answer = await attempt;
      if (answer !== undefined) this.remember(id, answer);
      return answer;
    } finally {
      this.running.delete(id);
    }
  }

  private async resolve(key: RetryKey, recorded: boolean, apply: () => Promise<string | undefined>): Promise<string | undefined> {
    const store = recorded ? this.recorded : null;
    const found = store ? await store.find(key) : null;
    if (found !== null) return found;
    const answer = await apply();
    // The write is applied: a failure to record it must not turn into an error the client retries.
    if (store && answer !== undefined) await store.record(key, answer).catch(this.onRecordFailed);
    return answer;
  }

  private remember(id: string, answer: string): void {
    const size = id.length + answer.length;
    if (size > this.limits.bytes / 4) return;
    const previous = this.recent.get(id);
    if (previous !== undefined) {
      this.recent.delete(id);
      this.heldBytes -= id.length + previous.length;
    }
    this.recent.set(id, answer);
    this.heldBytes += size;
    for (const [oldest, value] of this.recent) {
      if (this.recent.size <= this.limits.entries && this.heldBytes <= this.limits.bytes) break;
      this.recent.delete(oldest);
      this.heldBytes -= oldest.length + value.length;
    }
  }
}
