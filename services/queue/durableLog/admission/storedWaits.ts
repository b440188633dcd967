import { RetryableError } from "../../../errors.js";

interface Waiter {
  /** The position the records stored in order must reach. */
  readonly position: number;
  /** Scopes whose interactive records ending at or before `upTo` must be stored too. */
  readonly scopes: readonly string[];
  readonly upTo: number;
  readonly resolve: () => void;
}

/**
 * Read-your-writes on a durable log (`ReadYourWrites.stored`, queue.ts): which records a reader of some
 * scopes (projects) waits for, and when they are stored. Records are stored in order, except
 * interactive ones (small writes), which the consumer may store ahead of a backlog
 * (queue/durableLog/consume/logConsumer.ts, express): a reader waits for the position in order of its scopes' other
 * records, and for each of their interactive records, stored either way.
 */
export class StoredWaits {
  /** Everything before it is stored in order. */
  private storedEnd: number;
  /** Per scope, the end of its last record that is not interactive, while not stored. */
  private readonly orderedEnds = new Map<string, number>();
  /** Per scope, the ends of its interactive records not known stored, ascending. */
  private readonly interactiveEnds = new Map<string, number[]>();
  /** The scopes of each interactive record not known stored, by its end (ascending: appended in order). */
  private readonly interactiveScopes = new Map<number, readonly string[]>();
  private waiters: Waiter[] = [];

  constructor(storedEnd: number) {
    this.storedEnd = storedEnd;
  }

  get stored(): number {
    return this.storedEnd;
  }

  /** A record ending at `end` of these scopes was synced. */
  appended(end: number, scopes: readonly string[], interactive: boolean): void {
    if (!interactive) {
      for (const scope of scopes) this.orderedEnds.set(scope, end);
      return;
    }
    if (scopes.length === 0) return;
    this.interactiveScopes.set(end, scopes);
    for (const scope of scopes) {
      const ends = this.interactiveEnds.get(scope);
      if (ends) ends.push(end);
      else this.interactiveEnds.set(scope, [end]);
    }
  }

  /** Everything before `position` is stored. */
  storedUpTo(position: number): void {
    if (position <= this.storedEnd) return;
    this.storedEnd = position;
    for (const [scope, end] of this.orderedEnds) if (end <= position) this.orderedEnds.delete(scope);
    for (const [end] of this.interactiveScopes) {
      if (end > position) break;
      this.forget(end);
    }
    this.wake();
  }

  /** The interactive records ending at these positions were stored ahead of the others. */
  storedAhead(ends: readonly number[]): void {
    for (const end of ends) this.forget(end);
    this.wake();
  }

  /**
   * Resolves once everything synced before `end` (the log's synced end now) of these scopes,
   * or everything when no scopes are given, is stored; `hurry` is told the position in order
   * that this needs. Rejects with RetryableError after `timeoutMs`.
   */
  wait(timeoutMs: number, end: number, scopes: readonly string[] | undefined, hurry: (position: number) => void): Promise<void> {
    const position = scopes ? Math.max(0, ...scopes.map((s) => this.orderedEnds.get(s) ?? 0)) : end;
    const waiter = { position, scopes: scopes ?? [], upTo: end };
    if (this.satisfied(waiter)) return Promise.resolve();
    hurry(Math.max(position, ...waiter.scopes.map((s) => this.interactiveEnds.get(s)?.at(-1) ?? 0)));
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== registered);
        reject(new RetryableError(`not stored within ${timeoutMs} ms`, 1));
      }, timeoutMs);
      const registered: Waiter = { ...waiter, resolve: () => (clearTimeout(timer), resolve()) };
      this.waiters.push(registered);
    });
  }

  private satisfied(w: Omit<Waiter, "resolve">): boolean {
    if (this.storedEnd < w.position) return false;
    return w.scopes.every((scope) => (this.interactiveEnds.get(scope)?.[0] ?? Infinity) > w.upTo);
  }

  private forget(end: number): void {
    const scopes = this.interactiveScopes.get(end);
    if (!scopes) return;
    this.interactiveScopes.delete(end);
    for (const scope of scopes) {
      const ends = this.interactiveEnds.get(scope)!;
      ends.splice(ends.indexOf(end), 1);
      if (ends.length === 0) this.interactiveEnds.delete(scope);
    }
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const done = this.waiters.filter((w) => this.satisfied(w));
    if (done.length === 0) return;
    this.waiters = this.waiters.filter((w) => !done.includes(w));
    for (const w of done) w.resolve();
  }
}
