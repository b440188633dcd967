import type { Logger } from "pino";
import type { KeyRing, StoredKey } from "./keys.js";
import { errorText } from "../errors.js";

/** Where the keys made over the API live (store/keys/keysRepository.ts). */
export interface KeySource {
  live(): Promise<readonly StoredKey[]>;
  recordUses(uses: ReadonlyMap<string, number>): Promise<void>;
}

/**
 * How often each process reads the stored keys: processes share only ClickHouse, so a key made
 * or revoked in one is accepted or refused by the others within this (plus one read).
 */
export const KEYS_RELOAD_MS = 2_000;
/** How often the times keys were last used are written: at most one row per key per interval. */
export const KEY_USES_FLUSH_MS = 60_000;

/**
 * Keeps a process's key ring in step with the stored keys: reads them at start and every
 * KEYS_RELOAD_MS, and writes when keys were used every KEY_USES_FLUSH_MS and at stop. A failed
 * read keeps the keys of the last one (logged); the next read retries.
 */
export class KeySync {
  private reloadTimer: NodeJS.Timeout | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  private reloading: Promise<void> | null = null;

  constructor(
    private readonly ring: KeyRing,
    private readonly source: KeySource,
    private readonly log: Logger,
  ) {}

  /** Reads the keys once, then keeps reading (a failed first read leaves only the configured keys until one succeeds). */
  async start(): Promise<void> {
    await this.reloadLogged();
    this.reloadTimer = setInterval(() => void this.reloadLogged(), KEYS_RELOAD_MS);
    this.flushTimer = setInterval(() => void this.flushLogged(), KEY_USES_FLUSH_MS);
    this.reloadTimer.unref();
    this.flushTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.reloadTimer) clearInterval(this.reloadTimer);
    if (this.flushTimer) clearInterval(this.flushTimer);
    this.reloadTimer = this.flushTimer = null;
    await this.reloading;
    await this.flushLogged();
  }

  private async reload(): Promise<void> {
    const mark = this.ring.mark();
    this.ring.replaceStored(await this.source.live(), mark);
  }

  private async reloadLogged(): Promise<void> {
    if (this.reloading) return;
    this.reloading = this.reload()
      .catch((err: unknown) => this.log.warn({ err: errorText(err) }, "could not reload the API keys: keeping the last ones read"))
      .finally(() => {
        this.reloading = null;
      });
    await this.reloading;
  }

  private async flushLogged(): Promise<void> {
    const uses = this.ring.takeUses();
    if (uses.size === 0) return;
    await this.source.recordUses(uses).catch((err: unknown) => this.log.warn({ err: errorText(err), keys: uses.size }, "could not record when API keys were last used"));
  }
}
