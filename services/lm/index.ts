/**
 * The built-in language model (issue 10): a small byte-level causal transformer on tfjs's
 * wasm backend, its sampling, SFT and RL steps, its weight format and the base models the
 * project trains itself. A library: it imports only ground modules and tfjs.
 *
 * The service never calls it on the thread that answers requests: it asks its model threads
 * (modelThreads.ts, which run this library in modelThread.ts), and reads what it needs there
 * without tfjs from baseModelCatalog.ts, trainingDefaults.ts and types.ts.
 */
export type {
  BaseModelInfo, ChatRole, ChatTurn, Completion, LanguageModel, RlChoice, RlConfig, RlGroup, RlItem, RlTrajectory,
  SamplingOptions, SftConfig, SftExample, StepMetrics, TokenLogprob, TopLogprob, TrainingProgress, TrainingResult,
} from "./types.js";
export { baseModels, baseModelWeights } from "./baseModels.js";
export { loadModel } from "./model.js";
export { trainSft } from "./sft.js";
export { trainRl } from "./rl.js";
export { RL_DEFAULTS, SFT_DEFAULTS } from "./trainingDefaults.js";
export { decodeWeights } from "./weightsFormat.js";
export { InvalidWeightsError, TrainingAbortedError, TrainingInputError } from "./errors.js";
