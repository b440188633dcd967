import { performance } from "node:perf_hooks";
import { systemCheckOp, trainingHealthOp, type SystemCheck } from "../contract/training.js";
import type { HttpApi } from "../http/app.js";
import { errorText } from "../errors.js";

/** What the system check probes; each resolves true when healthy (a throw counts as a failure). */
export interface SystemProbes {
  readonly database: () => Promise<boolean>;
  /** The jobs topic accepts jobs and, in a process that runs jobs, its runner is alive. */
  readonly cpuQueue: () => Promise<boolean>;
  /** TRAINER: `external` relays training jobs to trainers outside the process (worker/jobs/trainerRelay.ts). */
  readonly trainer?: "builtin" | "external";
}

/**
 * There is no GPU trainer: training jobs run on the built-in CPU trainer (the jobs topic's
 * runner). The check passes, so that a default install is healthy, and says so in `errors`.
 */
export const NO_GPU_NOTE = "no GPU trainer is configured: training jobs run on the built-in CPU trainer (cpu_queue)";
export const EXTERNAL_TRAINER_NOTE = "training jobs are relayed to external trainers (TRAINER=external); whether one is polling is not checked";

async function timedCheck(probe: () => Promise<boolean>, failure: string): Promise<SystemCheck> {
  const started = performance.now();
  let ok = false;
  let error = failure;
  try {
    ok = await probe();
  } catch (err) {
    error = `${failure}: ${errorText(err)}`;
  }
  return { success: ok, duration: (performance.now() - started) / 1000, errors: ok ? [] : [error] };
}

/** `GET /v1/health` (200 while the process serves) and `GET /v1/system-check` (503 when a check fails). */
export function mountTrainingHealthRoutes(api: HttpApi, probes: SystemProbes): void {
  api.mount(trainingHealthOp, async () => ({ status: "ok" }));

  api.mount(systemCheckOp, async (_input, ctx) => {
    const [database, cpuQueue] = await Promise.all([
      timedCheck(probes.database, "ClickHouse did not answer"),
      timedCheck(probes.cpuQueue, "the jobs queue or its runner is not available"),
    ]);
    const answer = {
      api: { success: true, duration: 0, errors: [] },
      database,
      cpu_queue: cpuQueue,
      gpu_queue: { success: true, duration: 0, errors: [probes.trainer === "external" ? EXTERNAL_TRAINER_NOTE : NO_GPU_NOTE] },
    };
    ctx.res.status(database.success && cpuQueue.success ? 200 : 503).json(answer);
  });
}
