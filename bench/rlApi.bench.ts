/**
 * The held-out RL proof of issue 10 through the service's HTTP API only, as OpenPipe ART's
 * serverless backend and an OpenAI client run it: a model created with the training API,
 * completions with their logprobs sampled by the OpenAI Node SDK at `/v1/chat/completions` on
 * the model's latest checkpoint (`wandb-artifact:///<entity>/<project>/<name>`), scored with the
 * proof's format reward, submitted as an RL job's trajectory groups, the job's events polled
 * until `training_ended`, then the next round on the new checkpoint. The held-out score is taken
 * through chat completions before the first round and after the last.
 *
 * Same questions, seeds, sampling and RL settings as the in-process proof
 * (services/lm/heldOutProof.ts, `npx tsx bench/run.ts lm`), so the figures are comparable.
 *
 *   npx tsx bench/run.ts rlApi   (BENCH_RL_SEED: the proof's seed, default PROOF_DEFAULTS'
 *                                 (7); BENCH_RL_ROUNDS: rounds, default PROOF_DEFAULTS')
 */
import OpenAI from "openai";
import type { ChatCompletion } from "openai/resources/chat/completions";
import { oneDigitReward, bareDigitReward, type DigitQuestion } from "../services/lm/corpus.js";
import {
  heldOutQuestions, heldOutSeed, PROOF_DEFAULTS, PROOF_SAMPLING, proofPrompt, proofSplit, roundQuestions, trainingSampleSeed,
  type HeldOutScore, type ProofSettings,
} from "../services/lm/heldOutProof.js";
import { Random } from "../services/lm/random.js";
import { ensureDatabase } from "../services/store/migrations.js";
import { BENCH_KEY, spawnService, startBenchClickHouse } from "./support.js";
import { BENCH_ENTITY, createModel, jobEnded, trainingApi, type TrainingApi } from "./trainingApi.js";

const SETTINGS: ProofSettings = {
  ...PROOF_DEFAULTS,
  seed: Number(process.env.BENCH_RL_SEED ?? PROOF_DEFAULTS.seed),
  rounds: Number(process.env.BENCH_RL_ROUNDS ?? PROOF_DEFAULTS.rounds),
};
const DATABASE = "bench_rlapi";
const PROJECT = "rlapi";
const MODEL_NAME = "digits";

/** One sampled answer to a proof question, with its logprobs, as an OpenAI client asks for it. */
async function sample(openai: OpenAI, model: string, q: DigitQuestion, seed: number): Promise<ChatCompletion> {
  return openai.chat.completions.create({
    model,
    messages: [proofPrompt(q) as { role: "user"; content: string }],
    temperature: PROOF_SAMPLING.temperature,
    top_p: PROOF_SAMPLING.topP,
    max_tokens: PROOF_SAMPLING.maxTokens,
    seed,
    logprobs: true,
  });
}

const formatReward = (c: ChatCompletion): number => {
  const choice = c.choices[0]!;
  return bareDigitReward({ text: choice.message.content ?? "", finishReason: choice.finish_reason });
};

/** The proof's held-out score through chat completions: the same questions and seeds as heldOutScore. */
async function heldOutScore(openai: OpenAI, model: string): Promise<{ score: HeldOutScore; answeredBy: string }> {
  const questions = heldOutQuestions(SETTINGS);
  let format = 0;
  let correct = 0;
  let answeredBy = "";
  for (const [i, q] of questions.entries()) {
    for (let s = 0; s < SETTINGS.evalSamples; s++) {
      const c = await sample(openai, model, q, heldOutSeed(i, s));
      format += formatReward(c);
      correct += oneDigitReward(q, c.choices[0]!.message.content ?? "");
      answeredBy = c.model;
    }
  }
  const n = questions.length * SETTINGS.evalSamples;
  return { score: { format: format / n, correct: correct / n }, answeredBy };
}

/** A trajectory as ART sends it: the user message, then the sampled choice with its logprobs, and the reward. */
function trajectoryOf(q: DigitQuestion, c: ChatCompletion, reward: number) {
  return {
    messages_and_choices: [proofPrompt(q), c.choices[0]!],
    tools: null, additional_histories: [], reward,
    initial_policy_version: 0, final_policy_version: 0, metrics: {}, metadata: {}, logs: [],
  };
}

interface RoundFigures {
  reward: number;
  sampledFrom: string;
  step: number;
  samplingSeconds: number;
  trainingSeconds: number;
}

/** One round: groups sampled on the latest checkpoint, an RL job on them, its events until it ends. */
async function rlRound(openai: OpenAI, api: TrainingApi, modelId: string, model: string, random: Random): Promise<RoundFigures> {
  const started = Date.now();
  const groups = [];
  const rewards: number[] = [];
  let sampledFrom = "";
  for (const q of roundQuestions(proofSplit().train, SETTINGS, random)) {
    const trajectories = [];
    for (let s = 0; s < SETTINGS.samples; s++) {
      const c = await sample(openai, model, q, trainingSampleSeed(random));
      const reward = formatReward(c);
      rewards.push(reward);
      sampledFrom = c.model;
      trajectories.push(trajectoryOf(q, c, reward));
    }
    groups.push({ trajectories, exceptions: [], metadata: {}, metrics: {}, logs: [] });
  }
  const sampled = Date.now();
  const config = { learning_rate: SETTINGS.learningRate, epsilon: null, epsilon_high: null, advantage_balance: null, normalize_advantages: null, loss_fn: null, precalculate_logprobs: null };
  const { id } = await api<{ id: string }>("POST", "/v1/preview/training-jobs", { model_id: modelId, trajectory_groups: groups, experimental_config: config });
  await jobEnded(api, id, 200);
  const latest = await api<{ data: { step: number }[] }>("GET", `/v1/preview/models/${modelId}/checkpoints?limit=1&order=desc`);
  return {
    reward: rewards.reduce((a, b) => a + b, 0) / rewards.length,
    sampledFrom,
    step: latest.data[0]!.step,
    samplingSeconds: (sampled - started) / 1000,
    trainingSeconds: (Date.now() - sampled) / 1000,
  };
}

const fmt = (x: number) => x.toFixed(3);

async function main(): Promise<void> {
  const bench = await startBenchClickHouse("rlapi");
  await ensureDatabase(bench.ch.url, DATABASE);
  const service = await spawnService({ CLICKHOUSE_URL: bench.ch.url, CLICKHOUSE_DATABASE: DATABASE, DATA_DIR: bench.dir });
  const started = Date.now();
  try {
    const api = trainingApi(service.url);
    const openai = new OpenAI({ apiKey: BENCH_KEY, baseURL: `${service.url}/v1`, maxRetries: 0, timeout: 10 * 60_000 });
    const modelId = await createModel(api, PROJECT, MODEL_NAME);
    const model = `wandb-artifact:///${BENCH_ENTITY}/${PROJECT}/${MODEL_NAME}`;
    console.log(`RL held-out proof through the HTTP API (format reward; seed ${SETTINGS.seed}; ${SETTINGS.rounds} rounds of ${SETTINGS.promptsPerRound} prompts × ${SETTINGS.samples} samples, ` +
      `learning rate ${SETTINGS.learningRate}; held-out: ${heldOutQuestions(SETTINGS).length} prompts × ${SETTINGS.evalSamples} seeded samples at temperature 1; model ${model})`);
    const before = await heldOutScore(openai, model);
    console.log(`  held-out before, sampled from ${before.answeredBy}: format ${fmt(before.score.format)}, right digit ${fmt(before.score.correct)} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    const random = new Random(SETTINGS.seed);
    const rounds: RoundFigures[] = [];
    for (let round = 1; round <= SETTINGS.rounds; round++) {
      const r = await rlRound(openai, api, modelId, model, random);
      rounds.push(r);
      console.log(`  round ${round}: sampled from ${r.sampledFrom}, train-prompt reward ${fmt(r.reward)}, new checkpoint step ${r.step} ` +
        `(sampling ${r.samplingSeconds.toFixed(1)} s, job ${r.trainingSeconds.toFixed(1)} s)`);
    }
    const after = await heldOutScore(openai, model);
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`  held-out after, sampled from ${after.answeredBy}: format ${fmt(after.score.format)}, right digit ${fmt(after.score.correct)}`);
    console.log(`  seed ${SETTINGS.seed}: train-prompt reward per round ${rounds.map((r) => fmt(r.reward)).join(", ")}; held-out format ${fmt(before.score.format)} → ${fmt(after.score.format)}, ` +
      `right digit ${fmt(before.score.correct)} → ${fmt(after.score.correct)}; checkpoint steps 0 → ${rounds.map((r) => r.step).join(" → ")}; wall ${secs} s`);
    if (after.score.format <= before.score.format) process.exitCode = 1;
  } finally {
    await service.stop();
    await bench.stop();
  }
}

await main();
