import type { Logger } from "pino";
import { errorText } from "../errors.js";

/**
 * Runs `run` at start and every `intervalMs` until stopped, never two runs at once (a tick
 * that finds one under way is skipped); a failed run is logged with `failure` and the next one
 * goes on. `stop` resolves once the run under way ended. The worker's periodic tasks (alert
 * evaluation, monitor sweeps) are each one of these around their own run.
 */
export class PeriodicTask {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stoppedFlag = false;

  constructor(
    private readonly run: () => Promise<void>,
    private readonly options: { readonly intervalMs: number; readonly log: Logger; readonly failure: string },
  ) {}

  /** True once `stop` was called: a long run checks it between its steps. */
  get stopped(): boolean {
    return this.stoppedFlag;
  }

  start(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stoppedFlag = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  private tick(): void {
    if (this.stoppedFlag || this.running) return;
    this.running = this.run()
      .catch((err: unknown) => this.options.log.warn({ err: errorText(err) }, this.options.failure))
      .finally(() => {
        this.running = null;
      });
  }
}
