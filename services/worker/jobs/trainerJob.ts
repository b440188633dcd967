import { z } from "zod";
import type { MessageOrChoice, RlExperimentalConfig, SftConfig as ApiSftConfig, TrajectoryGroup } from "../../contract/training.js";
import { RL_JOB, RlJobInput, SFT_JOB, SftJobInput, type TrainingOutput } from "../../contract/trainingJobs.js";
import type { JsonObject } from "../../json.js";
import type { ModelThreads } from "../../lm/modelThreads.js";
import { RL_DEFAULTS, SFT_DEFAULTS } from "../../lm/trainingDefaults.js";
import type { ChatRole, ChatTurn, RlConfig, RlGroup, RlItem, SftConfig, SftExample, TrainingProgress, TrainingResult } from "../../lm/types.js";
import type { ClickHouseStore } from "../../store/clickhouse.js";
import { projectIdOf } from "../../store/training/trainingRows.js";
import type { JobContext, JobHandler } from "./handler.js";
import { TrainingDataReader } from "./trainingData.js";
import { finiteMetrics, TrainingCheckpoints } from "./trainingCheckpoints.js";

/**
 * The built-in trainer: runs `training.rl` and `training.sft` jobs (contract/trainingJobs.ts)
 * with the built-in language model (services/lm) on the CPU, in a model thread (lm/modelThreads.ts):
 * the thread that answers requests only reads the data and writes the events and the checkpoint.
 *
 * A run: the model's latest live checkpoint's weights (the base model's when none is left),
 * the data converted to lm's types, events `training_started` {num_sequences} and one
 * `gradient_step` per optimizer step (numbers only), then the new checkpoint (weights as a
 * file of the model's project, its metrics) is written BEFORE the handler returns: the runner
 * then writes `job_completed`, which the API shows as `training_ended`, so a client that sees
 * the end finds the checkpoint listed. A failure is the runner's `job_failed`, shown as
 * `training_failed` {error_message}. A job run again (its runner stopped after it wrote its
 * checkpoint) answers that checkpoint instead of training twice.
 */

export function trainerJobs(store: ClickHouseStore, modelThreads: ModelThreads): Record<string, JobHandler> {
  const trainer = new Trainer(store, modelThreads);
  return {
    [RL_JOB]: (input, ctx) => trainer.runRl(input, ctx),
    [SFT_JOB]: (input, ctx) => trainer.runSft(input, ctx),
  };
}

const ROLES: ReadonlySet<string> = new Set<ChatRole>(["system", "developer", "user", "assistant", "tool"]);

/** A message's content as text: a string, or the text of its parts (`[{type: "text", text}]`). */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string" ? (part as { text: string }).text : "")).join("");
  }
  return "";
}

function turnOf(message: { role: string; content?: unknown }, where: string): ChatTurn {
  if (!ROLES.has(message.role)) throw new Error(`${where}: unknown role ${JSON.stringify(message.role)}`);
  return { role: message.role as ChatRole, content: textOf(message.content) };
}

const utf8Bytes = (text: string): number[] => [...Buffer.from(text, "utf8")];

/** A Choice (it has `message`) is a trainable turn; anything else is a context message. */
function itemOf(item: MessageOrChoice, where: string): RlItem {
  if ("message" in item && typeof item.message === "object" && item.message !== null) {
    const choice = item as Extract<MessageOrChoice, { message: unknown }>;
    const tokens = choice.logprobs?.content ?? null;
    return {
      kind: "choice",
      choice: {
        content: choice.message.content ?? "",
        sampled: tokens === null ? null : tokens.map((t) => ({ bytes: t.bytes ?? utf8Bytes(t.token ?? ""), logprob: t.logprob })),
      },
    };
  }
  return { kind: "context", turn: turnOf(item as { role: string; content?: unknown }, where) };
}

/** API trajectory groups → lm's RL groups. */
export function rlGroupsOf(groups: readonly TrajectoryGroup[]): RlGroup[] {
  return groups.map((group, g) => ({
    trajectories: group.trajectories.map((trajectory, t) => ({
      reward: trajectory.reward,
      items: trajectory.messages_and_choices.map((item, i) => itemOf(item, `trajectory_groups[${g}].trajectories[${t}].messages_and_choices[${i}]`)),
    })),
  }));
}

/** The API's RL config over lm's defaults (`RL_DEFAULTS`): a null or absent key keeps the default. */
export function rlConfigOf(config: RlExperimentalConfig | null | undefined, defaults: RlConfig): RlConfig {
  return {
    learningRate: config?.learning_rate ?? defaults.learningRate,
    epsilon: config?.epsilon ?? defaults.epsilon,
    epsilonHigh: config?.epsilon_high ?? config?.epsilon ?? defaults.epsilonHigh,
    normalizeAdvantages: config?.normalize_advantages ?? defaults.normalizeAdvantages,
    lossFn: config?.loss_fn ?? defaults.lossFn,
  };
}

/** The API's SFT config over lm's defaults (`SFT_DEFAULTS`). */
export function sftConfigOf(config: ApiSftConfig | null | undefined, defaults: SftConfig): SftConfig {
  return {
    learningRate: config?.learning_rate ?? defaults.learningRate,
    batchSize: config?.batch_size ?? defaults.batchSize,
    assistantTurns: config?.assistant_turns ?? defaults.assistantTurns,
  };
}

const SftLine = z.looseObject({ messages: z.array(z.looseObject({ role: z.string(), content: z.unknown().optional() })).min(1) });

/** SFT rows (`{messages, tools?}`) → lm's examples; a bad row fails the job with its number. */
export function sftExamplesOf(rows: readonly unknown[]): SftExample[] {
  if (rows.length === 0) throw new Error("the training data has no examples");
  return rows.map((row, i) => {
    const parsed = SftLine.safeParse(row);
    if (!parsed.success) throw new Error(`training data example ${i + 1} is not {"messages": [{role, content}, ...]}`);
    return { messages: parsed.data.messages.map((m) => turnOf(m, `training data example ${i + 1}`)) };
  });
}

export function parseInput<T>(schema: z.ZodType<T>, input: JsonObject, type: string): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new Error(`${type} job input is not valid: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
}

class Trainer {
  private readonly checkpoints: TrainingCheckpoints;
  private readonly data: TrainingDataReader;

  constructor(store: ClickHouseStore, private readonly modelThreads: ModelThreads) {
    this.checkpoints = new TrainingCheckpoints(store, (id) => modelThreads.baseWeights(id));
    this.data = new TrainingDataReader(store);
  }

  async runRl(raw: JsonObject, ctx: JobContext): Promise<TrainingOutput> {
    const input = parseInput(RlJobInput, raw, RL_JOB);
    return this.run(input.model_id, ctx, async (weights, progress) => {
      const groups = rlGroupsOf(input.trajectory_groups);
      return this.modelThreads.trainRl(weights, groups, rlConfigOf(input.experimental_config, RL_DEFAULTS), progress, ctx.signal);
    });
  }

  async runSft(raw: JsonObject, ctx: JobContext): Promise<TrainingOutput> {
    const input = parseInput(SftJobInput, raw, SFT_JOB);
    return this.run(input.model_id, ctx, async (weights, progress) => {
      const examples = sftExamplesOf(await this.data.rows(input.training_data_url, ctx.signal));
      return this.modelThreads.trainSft(weights, examples, sftConfigOf(input.config, SFT_DEFAULTS), progress, ctx.signal);
    });
  }

  private async run(modelId: string, ctx: JobContext, train: (weights: Uint8Array, progress: TrainingProgress) => Promise<TrainingResult>): Promise<TrainingOutput> {
    const model = await this.checkpoints.liveModel(modelId);
    const earlier = await this.checkpoints.earlierOutput(model, ctx.jobId);
    if (earlier) return earlier;
    const weights = await this.checkpoints.startingWeights(model);
    const events = new EventRelay(ctx);
    const result = await train(weights, events.progress);
    await events.flushed();
    const digest = await this.checkpoints.weights.put(projectIdOf(model), result.weights);
    return this.checkpoints.addCheckpoint(model, ctx.jobId, digest, result.metrics);
  }
}

/**
 * lm reports progress as it trains (through the model thread's messages); the runner stores events one after another. The relay
 * queues them (the runner keeps their order) and `flushed` waits for all of them, failing the
 * run if one could not be stored.
 */
class EventRelay {
  private readonly pending: Promise<void>[] = [];

  constructor(private readonly ctx: JobContext) {}

  readonly progress: TrainingProgress = {
    started: (numSequences) => this.report("training_started", { num_sequences: numSequences }),
    step: (metrics) => this.report("gradient_step", finiteMetrics(metrics)),
  };

  private report(type: string, data: JsonObject): void {
    const write = this.ctx.progress({ type, data });
    write.catch(() => undefined);
    this.pending.push(write);
  }

  async flushed(): Promise<void> {
    await Promise.all(this.pending);
  }
}
