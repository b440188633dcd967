import { evalResultsQueryOp } from "../contract/evalResults.js";
import {
  evaluationRunCreateOp, evaluationRunFinishOp, evaluationRunReadOp, evaluationRunsDeleteOp, evaluationRunsListOp, predictionCreateOp,
  predictionFinishOp, predictionReadOp, predictionsDeleteOp, predictionsListOp, scoreCreateOp, scoreReadOp, scoresDeleteOp, scoresListOp,
} from "../contract/v2Calls.js";
import { datasetsOps, evaluationsOps, modelsOps, opsOps, scorersOps, type V2ObjectFamily } from "../contract/v2Objects.js";
import type { HttpApi } from "../http/app.js";
import type { JsonObject } from "../json.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { CallsReadRepository } from "../store/calls/callsRead.js";
import { EvalResultsRepository } from "../store/evalResults/evalResultsRepository.js";
import { FeedbackRepository } from "../store/feedback/feedbackRepository.js";
import type { RowText } from "../store/tables/tablesRepository.js";
import { V2ObjectsRepository } from "../store/v2/v2Objects.js";
import { writeStream } from "./jsonLines.js";
import { documentSpan, elementSpans, pathSpan } from "./jsonSpans.js";
import { EvalCallsService, type CallWriter } from "./v2Calls.js";
import type { ProjectRetention } from "../store/projects/retention.js";

export interface V2Deps {
  readonly store: ClickHouseStore;
  /** Each project's retention (what its calls reads leave out). */
  readonly retention: ProjectRetention;
  /** The worker's merge path (resources.ts: callBatchHandler), run in this process. */
  readonly writeCalls: CallWriter;
}

const projectOf = (params: { entity: string; project: string }): string => `${params.entity}/${params.project}`;

async function* items<T>(list: Promise<T[]>): AsyncGenerator<T> {
  yield* await list;
}

/**
 * `/v2/{entity}/{project}/...` (contract: contract/v2Objects.ts, v2Calls.ts, evalResults.ts). The
 * project is the path's; the HTTP layer checked the key reaches it (PATH_PROJECT).
 */
export function mountV2Routes(api: HttpApi, deps: V2Deps): void {
  const objects = new V2ObjectsRepository(deps.store);
  mountObjectFamilies(api, objects);
  mountCallFamilies(api, new EvalCallsService(new CallsReadRepository(deps.store, deps.retention), objects, new FeedbackRepository(deps.store), deps.writeCalls));
  const results = new EvalResultsRepository(deps.store, deps.retention);
  api.mount(evalResultsQueryOp, async ({ params, body }) => results.query(projectOf(params), body));
}

function mountObjectFamilies(api: HttpApi, objects: V2ObjectsRepository): void {
  // The families differ only in their read shape, which the repository builds per family.
  const common = (family: V2ObjectFamily, familyOps: typeof opsOps | typeof datasetsOps | typeof scorersOps | typeof evaluationsOps | typeof modelsOps) => {
    const ops = familyOps as typeof opsOps;
    api.mount(ops.list, async ({ params, query }, ctx) => {
      await writeStream(ctx.res, ctx.req.headers.accept, items(objects.list(family, projectOf(params), query.limit, query.offset)));
    });
    api.mount(ops.read, async ({ params }) => objects.read(family, projectOf(params), params.object_id, params.digest) as never);
    api.mount(ops.delete, async ({ params, query }) => ({ num_deleted: await objects.delete(family, projectOf(params), params.object_id, query.digests) }));
  };
  common("ops", opsOps);
  common("datasets", datasetsOps);
  common("scorers", scorersOps);
  common("evaluations", evaluationsOps);
  common("models", modelsOps);
  api.mount(opsOps.create, async ({ params, body }, ctx) => objects.createOp(ctx.reachProject(projectOf(params)), body, ctx.principal.username));
  api.mount(datasetsOps.create, async ({ params, body }, ctx) =>
    objects.createDataset(ctx.reachProject(projectOf(params)), body, ctx.principal.username, rowTexts(ctx.bodyText, body.rows.length)),
  );
  api.mount(scorersOps.create, async ({ params, body }, ctx) => objects.createScorer(ctx.reachProject(projectOf(params)), body, ctx.principal.username));
  api.mount(evaluationsOps.create, async ({ params, body }, ctx) => objects.createEvaluation(ctx.reachProject(projectOf(params)), body, ctx.principal.username));
  api.mount(modelsOps.create, async ({ params, body }, ctx) => objects.createModel(ctx.reachProject(projectOf(params)), body, ctx.principal.username));
}

function mountCallFamilies(api: HttpApi, calls: EvalCallsService): void {
  api.mount(evaluationRunsListOp, async ({ params, query }, ctx) => {
    await writeStream(ctx.res, ctx.req.headers.accept, items(calls.listRuns(projectOf(params), query, query)));
  });
  api.mount(evaluationRunCreateOp, async ({ params, body }, ctx) => ({ evaluation_run_id: await calls.createRun(projectOf(params), body, ctx.principal.username) }));
  api.mount(evaluationRunsDeleteOp, async ({ params, query }, ctx) => ({ num_deleted: await calls.deleteRuns(projectOf(params), query.evaluation_run_ids, ctx.principal.username) }));
  api.mount(evaluationRunReadOp, async ({ params }) => calls.readRun(projectOf(params), params.id));
  api.mount(evaluationRunFinishOp, async ({ params, body }, ctx) => {
    await calls.finishRun(projectOf(params), params.id, body.summary as JsonObject | null | undefined, ctx.principal.username);
    return { success: true };
  });

  api.mount(predictionsListOp, async ({ params, query }, ctx) => {
    await writeStream(ctx.res, ctx.req.headers.accept, items(calls.listPredictions(projectOf(params), query.evaluation_run_id, query)));
  });
  api.mount(predictionCreateOp, async ({ params, body }, ctx) => ({ prediction_id: await calls.createPrediction(projectOf(params), body, ctx.principal.username) }));
  api.mount(predictionsDeleteOp, async ({ params, query }, ctx) => ({ num_deleted: await calls.deletePredictions(projectOf(params), query.prediction_ids, ctx.principal.username) }));
  api.mount(predictionReadOp, async ({ params }) => calls.readPrediction(projectOf(params), params.id));
  api.mount(predictionFinishOp, async ({ params }) => {
    await calls.finishPrediction(projectOf(params), params.id);
    return { success: true };
  });

  api.mount(scoresListOp, async ({ params, query }, ctx) => {
    await writeStream(ctx.res, ctx.req.headers.accept, items(calls.listScores(projectOf(params), query.evaluation_run_id, query)));
  });
  api.mount(scoreCreateOp, async ({ params, body }, ctx) => ({ score_id: await calls.createScore(projectOf(params), body, ctx.principal.username) }));
  api.mount(scoresDeleteOp, async ({ params, query }, ctx) => ({ num_deleted: await calls.deleteScores(projectOf(params), query.score_ids, ctx.principal.username) }));
  api.mount(scoreReadOp, async ({ params }) => calls.readScore(projectOf(params), params.id));
}

/** Each row's text as the request wrote it (undefined without the text, or when it does not hold `count` rows). */
function rowTexts(text: string | undefined, count: number): RowText[] | undefined {
  if (text === undefined) return undefined;
  const array = pathSpan(text, documentSpan(text), ["rows"]);
  const spans = array ? [...elementSpans(text, array)] : [];
  if (spans.length !== count) return undefined;
  return spans.map((span, i) => ({ text: text.slice(span.start, span.end), loc: ["body", "rows", i] }));
}
