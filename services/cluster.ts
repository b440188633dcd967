import cluster, { type Worker } from "node:cluster";
import type { Logger } from "pino";
import { rolesOf, type Config } from "./config.js";
import { openStore, resolveKeys, type RunningService } from "./service.js";

/** What a cluster process tells the primary once its roles run. */
interface ReadyMessage {
  readonly ready: true;
  readonly url: string | null;
}

const isReady = (message: unknown): message is ReadyMessage =>
  typeof message === "object" && message !== null && (message as { ready?: unknown }).ready === true;

/** In a cluster process: tells the primary that this process serves. */
export function reportReady(url: string | null): void {
  if (cluster.isWorker) process.send?.({ ready: true, url } satisfies ReadyMessage);
}

/**
 * PROCESSES > 1: the primary prepares what is shared (the local ClickHouse, the schema,
 * the local key), then runs that many copies of the service on one port through Node's
 * cluster module, which hands each new connection to the next process. Every process runs
 * the roles of ROLE with its own queue and worker; in the embedded mode each one writes
 * what it received (the worker's write-then-look protocol keeps calls whole when a call's
 * parts reach two processes) through its own log, the directory of its PROCESS_INDEX. A
 * process that dies is replaced by one with its index (which replays that log), started
 * only once the dead one is gone, so no two processes share a log. Stopping sends SIGTERM to
 * every process, waits until each has drained and exited, then stops the local ClickHouse.
 */
export async function startCluster(config: Config, log: Logger): Promise<RunningService> {
  const { store, local } = await openStore(config, log);
  await store.close();
  const { printed } = resolveKeys(config, log);
  const env = { CLICKHOUSE_URL: store.url };
  let stopping = false;
  let url: string | null = null;

  const fork = (index: number): Promise<Worker> =>
    new Promise((done, fail) => {
      const worker = cluster.fork({ ...env, PROCESS_INDEX: String(index) });
      worker.on("message", (message: unknown) => {
        if (!isReady(message)) return;
        url = message.url;
        done(worker);
      });
      worker.once("exit", (code, signal) => {
        fail(new Error(`cluster process exited while starting (code ${code}, signal ${signal})`));
        if (stopping) return;
        log.error({ pid: worker.process.pid, code, signal }, "cluster process died: starting another");
        fork(index).catch((err: unknown) => log.error({ err }, "could not replace a cluster process"));
      });
    });

  try {
    await Promise.all(Array.from({ length: config.PROCESSES }, (_, index) => fork(index)));
  } catch (err) {
    stopping = true;
    await stopAll();
    if (local) await local.stop();
    throw err;
  }
  log.info({ url, processes: config.PROCESSES }, "cluster serving");

  return {
    url,
    // Every process listens on it too (the cluster module shares the port as it shares PORT).
    otlpGrpcUrl: rolesOf(config.ROLE).has("ingest") && config.OTLP_GRPC_PORT !== 0 ? `http://127.0.0.1:${config.OTLP_GRPC_PORT}` : null,
    clickhouseUrl: store.url,
    apiKey: printed,
    operations: [],
    stop: async () => {
      stopping = true;
      await stopAll();
      if (local) await local.stop();
    },
  };
}

async function stopAll(): Promise<void> {
  const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((done) => {
          if (worker.isDead()) return done();
          worker.once("exit", () => done());
          worker.process.kill("SIGTERM");
        }),
    ),
  );
}
