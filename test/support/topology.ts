import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { alterClusterOf, startCluster, stopCluster, superviseCluster, type ClusterState } from "../../scripts/clickhouseCluster.js";
import { loadConfig } from "../../services/config.js";
import { StoreUnavailableError } from "../../services/errors.js";
import { startService } from "../../services/service.js";
import { freePort } from "../../services/store/localServer.js";
import { startMockKafka } from "./mockKafka.js";
import { startRoutingProxy, type RoutingProxy } from "./routingProxy.js";
import { AUTH_KEYS } from "./keys.js";
import { until } from "./polling.js";

/**
 * The service as separate processes, as it runs at scale: INGEST_PROCESSES × ROLE=ingest,
 * WORKER_PROCESSES × ROLE=worker in one consumer group, one ROLE=query, all on one
 * database of one ClickHouse (cluster) and one Kafka, behind a routing proxy
 * (routingProxy.ts) whose URL is the service's.
 */
export const INGEST_PROCESSES = 2;
export const WORKER_PROCESSES = 2;
/** The brokers of the mock Kafka of `startClusterTopology`. */
const KAFKA_BROKERS = 3;

const REPO = resolve(fileURLToPath(import.meta.url), "..", "..", "..");
const STARTED_WITHIN_MS = 120_000;
const STOPPED_WITHIN_MS = 30_000;

export interface TopologySettings {
  readonly clickhouseUrl: string;
  readonly cluster?: string;
  /** CLICKHOUSE_ALTER_CLUSTER. */
  readonly alterCluster?: string;
  readonly database: string;
  readonly kafkaBrokers: string;
  /** Each process's output goes to `<name>.log` here. */
  readonly logDir: string;
  /** Node's arguments that run the service: services/main.ts through tsx unless given (a bench runs the compiled build). */
  readonly serviceArgs?: readonly string[];
  /** The processes' LOG_LEVEL: TEST_LOG_LEVEL or `warn` unless given (the workers log at info at least). */
  readonly logLevel?: string;
}

export interface Topology {
  /** The routing proxy: the service's URL. */
  readonly url: string;
  readonly database: string;
  /** Its processes (ingest-<i>, worker-<i>, query): what the cluster bench measures. */
  readonly processes: readonly { readonly name: string; readonly pid: number; readonly url: string }[];
  stop(): Promise<void>;
}

interface ServiceProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<void>;
}

/** How the processes' start is awaited. */
const STARTING = { timeoutMs: STARTED_WITHIN_MS, everyMs: 200 };

/** The service as a process (services/main.ts through tsx unless `serviceArgs` say otherwise), answering /health on its port (a worker: METRICS_PORT). */
async function spawnProcess(name: string, env: Record<string, string>, logDir: string, serviceArgs: readonly string[]): Promise<ServiceProcess> {
  const port = await freePort();
  const out = createWriteStream(join(logDir, `${name}.log`));
  const child = spawn(process.execPath, serviceArgs, {
    cwd: REPO,
    // OTLP/gRPC off: two ingest processes on one machine would both ask for its default port.
    env: { ...process.env, OTLP_GRPC_PORT: "0", ...env, ...(env.ROLE === "worker" ? { METRICS_PORT: String(port) } : { PORT: String(port) }), HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const url = `http://127.0.0.1:${port}`;
  return { name, child, url, exited };
}

async function stopProcess(p: ServiceProcess): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill("SIGTERM");
  const timer = setTimeout(() => p.child.kill("SIGKILL"), STOPPED_WITHIN_MS);
  await p.exited;
  clearTimeout(timer);
}

/**
 * The partitions each group assigned to a worker when it last joined, from KafkaJS's "Consumer
 * has joined the group" lines in its log (the mock broker has no DescribeGroups).
 */
function lastAssignments(logFile: string): Map<string, string[]> {
  const byGroup = new Map<string, string[]>();
  for (const line of readFileSync(logFile, "utf8").split("\n")) {
    if (!line.includes("Consumer has joined the group")) continue;
    const { groupId, memberAssignment } = JSON.parse(line) as { groupId: string; memberAssignment: Record<string, number[]> };
    byGroup.set(groupId, Object.entries(memberAssignment).flatMap(([topic, partitions]) => partitions.map((p) => `${topic}:${p}`)));
  }
  return byGroup;
}

/** Every worker holds partitions of each group, no two the same ones: the group settled (no rebalance still to come). */
function groupsSettled(workerLogs: readonly string[], groups: readonly string[]): boolean {
  const assignments = workerLogs.map(lastAssignments);
  return groups.every((group) => {
    const held = assignments.map((a) => a.get(group) ?? []);
    const all = held.flat();
    return held.every((partitions) => partitions.length > 0) && new Set(all).size === all.length;
  });
}

export async function startTopology(settings: TopologySettings): Promise<Topology> {
  const env: Record<string, string> = {
    CLICKHOUSE_URL: settings.clickhouseUrl,
    CLICKHOUSE_DATABASE: settings.database,
    ...(settings.cluster === undefined ? {} : { CLICKHOUSE_CLUSTER: settings.cluster }),
    ...(settings.alterCluster === undefined ? {} : { CLICKHOUSE_ALTER_CLUSTER: settings.alterCluster }),
    KAFKA_BROKERS: settings.kafkaBrokers,
    AUTH_KEYS,
    DATA_DIR: settings.logDir,
    LOG_LEVEL: settings.logLevel ?? process.env.TEST_LOG_LEVEL ?? "warn",
  };
  // One ingest service in this process first: it migrates the database once, before the
  // processes start together, and tells which operations are ingest's (the queued ones).
  const migrator = await startService(loadConfig({ ...env, ROLE: "ingest", PORT: "0", OTLP_GRPC_PORT: "0", HOST: "127.0.0.1" }), pino({ level: "silent" }));
  const ingestOperations = migrator.operations.filter((op) => op.queued).map(({ method, path }) => ({ method, path }));
  await migrator.stop();

  const serviceArgs = settings.serviceArgs ?? ["--import", "tsx", "services/main.ts"];
  const processes: ServiceProcess[] = [];
  let proxy: RoutingProxy | null = null;
  const stop = async () => {
    await proxy?.stop();
    // Intake first, then the workers drain what was acknowledged.
    await Promise.all(processes.filter((p) => !p.name.startsWith("worker")).map(stopProcess));
    await Promise.all(processes.filter((p) => p.name.startsWith("worker")).map(stopProcess));
  };
  try {
    // At info, a worker logs its group joins (groupsSettled).
    for (let i = 0; i < WORKER_PROCESSES; i++) processes.push(await spawnProcess(`worker-${i}`, { ...env, ROLE: "worker", LOG_LEVEL: "info" }, settings.logDir, serviceArgs));
    for (let i = 0; i < INGEST_PROCESSES; i++) processes.push(await spawnProcess(`ingest-${i}`, { ...env, ROLE: "ingest" }, settings.logDir, serviceArgs));
    processes.push(await spawnProcess("query", { ...env, ROLE: "query" }, settings.logDir, serviceArgs));
    for (const p of processes) {
      await until(async () => {
        if (p.child.exitCode !== null) throw new Error(`${p.name} exited with ${p.child.exitCode}; its log: ${settings.logDir}/${p.name}.log`);
        return fetch(`${p.url}/health`).then((res) => res.ok, () => false);
      }, { ...STARTING, what: `${p.name} answering /health (its log: ${settings.logDir}/${p.name}.log)` });
    }
    const group = loadConfig(env).KAFKA_GROUP_ID;
    const workerLogs = processes.filter((p) => p.name.startsWith("worker")).map((p) => join(settings.logDir, `${p.name}.log`));
    await until(async () => groupsSettled(workerLogs, [group, `${group}.jobs`]), { ...STARTING, what: `the workers' groups settled with ${WORKER_PROCESSES} members` });
    const ingestUrls = processes.filter((p) => p.name.startsWith("ingest")).map((p) => p.url);
    proxy = await startRoutingProxy(ingestOperations, ingestUrls, processes.find((p) => p.name === "query")!.url);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: proxy.url, database: settings.database, processes: processes.map(({ name, child, url }) => ({ name, pid: child.pid!, url })), stop };
}

export interface ClusterTopology {
  readonly cluster: ClusterState;
  readonly kafkaBrokers: string;
  /** The Kafka mock's process. */
  readonly kafkaPid: number;
  readonly topology: Topology;
  /** Stops the topology, the broker, the supervision and the cluster; the directory stays. */
  stop(): Promise<void>;
}

/**
 * The topology at scale as the cluster run and the cluster bench start it: the harness's
 * cluster in `dir` (scripts/clickhouseCluster.ts: ZooKeeper, 2 shards x 2 replicas of 18.16)
 * supervised while it runs (a node that exits or whose distributed-DDL worker ends is started
 * again, said on stderr), a KAFKA_BROKERS-broker Kafka mock, and `startTopology` on a fresh
 * database with the processes' logs in `dir`/services. If it fails to start, what it started
 * is stopped and the directory kept for those logs.
 */
export async function startClusterTopology(dir: string, options: Pick<TopologySettings, "serviceArgs" | "logLevel"> = {}): Promise<ClusterTopology> {
  let cluster = await startCluster(dir);
  const supervisor = superviseCluster(dir, (name, why) => console.error(`[cluster] ${name} started again: ${why}`));
  const kafka = await startMockKafka(KAFKA_BROKERS);
  const logDir = join(dir, "services");
  mkdirSync(logDir, { recursive: true });
  const settings = { clickhouseUrl: cluster.nodes[0]!.url, cluster: cluster.cluster, alterCluster: alterClusterOf(cluster.cluster), kafkaBrokers: kafka.brokers, logDir, ...options };
  const start = () => startTopology({ ...settings, database: `s_${randomBytes(6).toString("hex")}` });
  const stopHarness = async () => {
    await kafka.stop();
    await supervisor.stop();
    await stopCluster(dir);
  };
  const topology = await start()
    .catch(async (err: unknown) => {
      // 18.16 can crash on the first ON CLUSTER statement when its distributed-DDL worker lost
      // its ZooKeeper session in the seconds after the start (the statement finds no session):
      // the crashed node is started again, and the topology on a fresh database.
      if (!(err instanceof StoreUnavailableError)) throw err;
      // Its state again: the node started again has another pid.
      cluster = await startCluster(dir);
      return start();
    })
    .catch(async (err: unknown) => {
      await stopHarness();
      throw err;
    });
  return { cluster, kafkaBrokers: kafka.brokers, kafkaPid: kafka.pid, topology, stop: async () => {
      await topology.stop();
      await stopHarness();
    },
  };
}
