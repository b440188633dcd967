import type { RlConfig, SftConfig } from "./types.js";

/** The training settings a job leaves unset (a module of their own: the thread that answers requests reads them without loading tfjs). */
export const SFT_DEFAULTS: SftConfig = { learningRate: 1e-3, batchSize: "auto", assistantTurns: "all" };
export const RL_DEFAULTS: RlConfig = { learningRate: 5e-4, epsilon: 0.2, epsilonHigh: 0.2, normalizeAdvantages: true, lossFn: "ppo" };
