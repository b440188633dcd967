import { spawn } from "node:child_process";
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join, resolve } from "node:path";
import { CLICKHOUSE_SERVER_BIN, freePorts, pings, SERVER_USERS_XML, serverConfigXml } from "../services/store/localServer.js";
import { errorText } from "../services/errors.js";

/**
 * A ClickHouse cluster on this machine, for the suite's cluster stage and for people
 * (scripts/clickhouse-cluster.sh): ZooKeeper 3.8 from Debian's `zookeeper` package and four
 * ClickHouse 18.16 servers, two shards of two replicas, cluster `tracehouse`
 * (`internal_replication` on, macros `{shard}`/`{replica}`, distributed DDL). Everything lives
 * under one directory: each process's config, data and log, and `cluster.json`, the state
 * (ports, pids) that the commands and the tests read. The processes are detached: they
 * outlive the command that started them until `stop`. Every command is idempotent: `start`
 * starts what is not running and waits until all of it answers; ports are chosen once and
 * kept, so a restarted process rejoins on the same address.
 */
export const CLUSTER_NAME = "tracehouse";

/**
 * The cluster of the same shards with their first replica only: the service's
 * CLICKHOUSE_ALTER_CLUSTER, where ALTERs of the Replicated tables run.
 */
export const alterClusterOf = (cluster: string): string => `${cluster}_alter`;

/** The service's settings for the harness's cluster. */
export const clusterEnv = (state: ClusterState): Record<string, string> => ({ CLICKHOUSE_CLUSTER: state.cluster, CLICKHOUSE_ALTER_CLUSTER: alterClusterOf(state.cluster) });
export const SHARDS = 2;
export const REPLICAS = 2;

/** Debian's ZooKeeper: the jar's manifest names its dependencies; slf4j-simple writes its log. */
const ZOOKEEPER_CLASSPATH = ["/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"];
const ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
/**
 * The nodes' ZooKeeper session timeout by default: ClickHouse's own default. A node whose
 * session expired takes distributed DDL again only once it noticed, which on 18.16 can outlast
 * a client's wait (and 18.16 was seen to crash after it), so the stalls of a loaded machine
 * must stay well under it: a shorter timeout expired every node's session in a loaded run.
 * A replica restarted after `kill -9` replicates again only once its old session expired: a
 * test that kills replicas asks for a shorter one.
 */
const ZOOKEEPER_SESSION_MS = 30_000;
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;

export interface NodeState {
  /** `ch<shard><replica>`: also the `{replica}` macro. */
  readonly name: string;
  readonly shard: number;
  readonly replica: number;
  readonly httpPort: number;
  readonly tcpPort: number;
  readonly interserverPort: number;
  readonly url: string;
  pid: number | null;
}

export interface ClusterOptions {
  /** The nodes' ZooKeeper session timeout (ZOOKEEPER_SESSION_MS unless given), fixed at the cluster's first start. */
  readonly zookeeperSessionMs?: number;
}

export interface ClusterState {
  readonly cluster: string;
  /** Absent in the state of a cluster made before it was kept: ZOOKEEPER_SESSION_MS. */
  readonly zookeeperSessionMs?: number;
  readonly zookeeper: { readonly port: number; pid: number | null };
  readonly nodes: NodeState[];
}

export interface ProcessStatus {
  readonly name: string;
  readonly pid: number | null;
  readonly running: boolean;
  readonly ready: boolean;
}

const stateFile = (dir: string) => join(dir, "cluster.json");

export function readClusterState(dir: string): ClusterState | null {
  const file = stateFile(resolve(dir));
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as ClusterState) : null;
}

function writeState(dir: string, state: ClusterState): void {
  writeFileSync(stateFile(dir), `${JSON.stringify(state, null, 2)}\n`);
}

async function newState(options: ClusterOptions): Promise<ClusterState> {
  const ports = await freePorts(1 + 3 * SHARDS * REPLICAS);
  const next = () => ports.pop()!;
  const nodes: NodeState[] = [];
  for (let shard = 1; shard <= SHARDS; shard++) {
    for (let replica = 1; replica <= REPLICAS; replica++) {
      const httpPort = next();
      nodes.push({ name: `ch${shard}${replica}`, shard, replica, httpPort, tcpPort: next(), interserverPort: next(), url: `http://127.0.0.1:${httpPort}`, pid: null });
    }
  }
  return { cluster: CLUSTER_NAME, zookeeperSessionMs: options.zookeeperSessionMs ?? ZOOKEEPER_SESSION_MS, zookeeper: { port: next(), pid: null }, nodes };
}

/** Whether `pid` is a live process started for this directory (not a later process that reused the number). */
function isOurs(pid: number | null, marker: string): boolean {
  if (pid === null) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker);
  } catch {
    return false;
  }
}

function spawnDetached(command: string, args: readonly string[], logFile: string): number {
  const out = openSync(logFile, "a");
  try {
    const child = spawn(command, args, { stdio: ["ignore", out, out], detached: true });
    child.unref();
    if (child.pid === undefined) throw new Error(`${command} did not start`);
    return child.pid;
  } finally {
    closeSync(out);
  }
}

/** A process that exited before it answered; the message ends with its log's last lines. */
class ExitedWhileStarting extends Error {}

/** The last `lines` lines of a log file (its last 64 KB at most), or "" when there is none. */
function logTail(file: string, lines = 15): string {
  try {
    const fd = openSync(file, "r");
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, 64 * 1024);
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, size - length);
      return buffer.toString("utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } finally {
      closeSync(fd);
    }
  } catch {
    return "";
  }
}

async function waitUntil(what: string, ready: () => Promise<boolean>, alive: () => boolean, logFiles: readonly string[], timeoutMs = READY_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive()) {
      const tails = logFiles.map((f) => [f, logTail(f)] as const).filter(([, tail]) => tail);
      throw new ExitedWhileStarting(`${what} exited while starting${tails.map(([f, tail]) => `\n--- the end of ${f} ---\n${tail}`).join("") || " (its logs are empty)"}`);
    }
    if (await ready()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms`);
}

/** ZooKeeper's `ruok` four-letter command answers `imok` once it serves. */
function zookeeperAnswers(port: number): Promise<boolean> {
  return new Promise((done) => {
    let answer = "";
    const socket = connect(port, "127.0.0.1", () => socket.end("ruok"));
    socket.setTimeout(2_000, () => socket.destroy());
    socket.on("data", (chunk) => (answer += chunk.toString()));
    socket.on("close", () => done(answer === "imok"));
    socket.on("error", () => done(false));
  });
}

/** The node answers a query that needs its ZooKeeper session. */
async function nodeReady(node: NodeState): Promise<boolean> {
  if (!(await pings(node.url))) return false;
  try {
    const res = await fetch(`${node.url}/?query=${encodeURIComponent("SELECT count() FROM system.zookeeper WHERE path = '/'")}`);
    await res.text();
    return res.ok;
  } catch {
    return false;
  }
}

function zookeeperDir(dir: string): string {
  return join(dir, "zookeeper");
}

export async function startZooKeeper(dirArg: string): Promise<void> {
  await oneStartAtATime(zookeeperDir(resolve(dirArg)), () => startZooKeeperOnce(resolve(dirArg)));
}

async function startZooKeeperOnce(dir: string): Promise<void> {
  const state = readClusterState(dir) ?? (await initialise(dir));
  const zkDir = zookeeperDir(dir);
  const config = join(zkDir, "zoo.cfg");
  if (!isOurs(state.zookeeper.pid, config)) {
    mkdirSync(join(zkDir, "data"), { recursive: true });
    writeFileSync(
      config,
      [
        "tickTime=1000",
        `dataDir=${join(zkDir, "data")}`,
        `clientPort=${state.zookeeper.port}`,
        "clientPortAddress=127.0.0.1",
        "admin.enableServer=false",
        "4lw.commands.whitelist=ruok,srvr,mntr",
        "maxSessionTimeout=60000",
        "",
      ].join("\n"),
    );
    const args = ["-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", ZOOKEEPER_CLASSPATH.join(":"), ZOOKEEPER_MAIN, config];
    state.zookeeper.pid = spawnDetached("java", args, join(zkDir, "zookeeper.log"));
    writeState(dir, state);
  }
  const pid = state.zookeeper.pid;
  await waitUntil("ZooKeeper", () => zookeeperAnswers(state.zookeeper.port), () => isOurs(pid, config), [join(zkDir, "zookeeper.log")]);
}

/** The cluster `name` of each shard's replicas (all, or the first `replicas` of each). */
function clusterXml(state: ClusterState, name: string, replicas = Infinity): string {
  const shards = [];
  for (let shard = 1; shard <= SHARDS; shard++) {
    const nodes = state.nodes.filter((n) => n.shard === shard).slice(0, replicas);
    shards.push(`<shard><internal_replication>true</internal_replication>${nodes.map((n) => `<replica><host>127.0.0.1</host><port>${n.tcpPort}</port></replica>`).join("")}</shard>`);
  }
  return `<${name}>${shards.join("")}</${name}>`;
}

function remoteServers(state: ClusterState): string {
  return `<remote_servers>${clusterXml(state, state.cluster)}${clusterXml(state, alterClusterOf(state.cluster), 1)}</remote_servers>`;
}

function clusterConfig(state: ClusterState, node: NodeState): string {
  return `
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <interserver_http_port>${node.interserverPort}</interserver_http_port>
  ${remoteServers(state)}
  <zookeeper><node><host>127.0.0.1</host><port>${state.zookeeper.port}</port></node><session_timeout_ms>${state.zookeeperSessionMs ?? ZOOKEEPER_SESSION_MS}</session_timeout_ms></zookeeper>
  <macros><shard>${String(node.shard).padStart(2, "0")}</shard><replica>${node.name}</replica></macros>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>`;
}

function nodeOf(state: ClusterState, name: string): NodeState {
  const node = state.nodes.find((n) => n.name === name);
  if (!node) throw new Error(`no node ${name}: the nodes are ${state.nodes.map((n) => n.name).join(", ")}`);
  return node;
}

/** The starts under way in this process, by directory and process name: one at a time each (superviseCluster and a caller's start may meet). */
const starting = new Map<string, Promise<void>>();

async function oneStartAtATime(key: string, start: () => Promise<void>): Promise<void> {
  const run = (starting.get(key) ?? Promise.resolve()).catch(() => undefined).then(start);
  starting.set(key, run);
  try {
    await run;
  } finally {
    if (starting.get(key) === run) starting.delete(key);
  }
}

/** Starts one ClickHouse node unless it runs; resolves once it answers with its ZooKeeper session up. */
export async function startNode(dirArg: string, name: string): Promise<void> {
  await oneStartAtATime(join(resolve(dirArg), name), () => startNodeOnce(resolve(dirArg), name));
}

/**
 * How many times a node that exits while starting is started: a crash right after the start
 * (18.16 and a young ZooKeeper session) is got past by a second start; a node that exits every
 * time (its port taken) fails with its log's end.
 */
const NODE_STARTS = 3;

async function startNodeOnce(dir: string, name: string): Promise<void> {
  for (let start = 1; ; start++) {
    try {
      return await startNodeProcess(dir, name);
    } catch (err) {
      if (!(err instanceof ExitedWhileStarting) || start === NODE_STARTS) throw err;
      process.stderr.write(`${err.message}\n(starting it again)\n`);
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

async function startNodeProcess(dir: string, name: string): Promise<void> {
  const state = readClusterState(dir);
  if (!state) throw new Error(`no cluster in ${dir}: run start first`);
  const node = nodeOf(state, name);
  const nodeDir = join(dir, node.name);
  const config = join(nodeDir, "config.xml");
  if (!isOurs(node.pid, config)) {
    for (const sub of ["log", "tmp", "user_files", "format_schemas"]) mkdirSync(join(nodeDir, sub), { recursive: true });
    writeFileSync(config, serverConfigXml(nodeDir, node.httpPort, node.tcpPort, clusterConfig(state, node)));
    writeFileSync(join(nodeDir, "users.xml"), SERVER_USERS_XML);
    node.pid = spawnDetached(CLICKHOUSE_SERVER_BIN, [`--config-file=${config}`], join(nodeDir, "log", "stdout.log"));
    writeState(dir, state);
  }
  const pid = node.pid;
  const logs = ["error.log", "stdout.log"].map((file) => join(nodeDir, "log", file));
  await waitUntil(`ClickHouse ${node.name}`, () => nodeReady(node), () => isOurs(pid, config), logs);
}

async function stopProcess(pid: number | null, marker: string, signal: NodeJS.Signals): Promise<void> {
  if (!isOurs(pid, marker)) return;
  process.kill(pid!, signal);
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isOurs(pid, marker) && !isZombie(pid!)) {
    if (Date.now() > deadline) {
      process.kill(pid!, "SIGKILL");
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A child of this process that exited and was not reaped yet still shows in /proc. */
function isZombie(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

/** Stops one ClickHouse node: SIGTERM (a clean shutdown), or SIGKILL to simulate a crash. */
export async function stopNode(dirArg: string, name: string, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  const dir = resolve(dirArg);
  const state = readClusterState(dir);
  if (!state) return;
  const node = nodeOf(state, name);
  await stopProcess(node.pid, join(dir, node.name, "config.xml"), signal);
}

export async function stopZooKeeper(dirArg: string, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  const dir = resolve(dirArg);
  const state = readClusterState(dir);
  if (!state) return;
  await stopProcess(state.zookeeper.pid, join(zookeeperDir(dir), "zoo.cfg"), signal);
}

async function initialise(dir: string, options: ClusterOptions = {}): Promise<ClusterState> {
  mkdirSync(dir, { recursive: true });
  const state = await newState(options);
  writeState(dir, state);
  return state;
}

/** Starts ZooKeeper and the four nodes (what is not already running) and waits until all answer; `options` apply to a new cluster. */
export async function startCluster(dirArg: string, options: ClusterOptions = {}): Promise<ClusterState> {
  const dir = resolve(dirArg);
  if (!existsSync(CLICKHOUSE_SERVER_BIN)) throw new Error(`${CLICKHOUSE_SERVER_BIN} not found: run scripts/install.sh`);
  if (!existsSync(ZOOKEEPER_CLASSPATH[0]!)) throw new Error(`${ZOOKEEPER_CLASSPATH[0]} not found: run scripts/install.sh (Debian's zookeeper package)`);
  if (!readClusterState(dir)) await initialise(dir, options);
  await startZooKeeper(dir);
  const state = readClusterState(dir)!;
  await Promise.all(state.nodes.map((n) => startNode(dir, n.name)));
  return readClusterState(dir)!;
}

/** Stops the four nodes, then ZooKeeper; the data stays for the next start. */
export async function stopCluster(dirArg: string): Promise<void> {
  const dir = resolve(dirArg);
  const state = readClusterState(dir);
  if (!state) return;
  await Promise.all(state.nodes.map((n) => stopNode(dir, n.name)));
  await stopZooKeeper(dir);
}

/** How often `superviseCluster` looks for a process that exited or a node whose DDL worker stopped. */
const SUPERVISE_PERIOD_MS = 2_000;

/**
 * What 18.16 logs when its distributed-DDL worker thread ends for good ("... Terminating."):
 * after any error it does not expect, e.g. "Node exists" on the `executed` mark of an `ALTER`
 * of a Replicated table `ON CLUSTER` that the shard's other replica ran at the same moment
 * (both take the shard's lock in turn, both run the statement, the second mark fails).
 */
const DDL_WORKER_ENDED = /<Error> DDLWorker: (Unexpected|Terminating)/;

export interface ClusterSupervisor {
  /** Ends the checks (before the cluster is stopped on purpose); resolves once a restart under way is done. */
  stop(): Promise<void>;
}

const errorLog = (dir: string, node: NodeState) => join(dir, node.name, "log", "error.log");

/**
 * The whole lines a node's error log gained since the last call for it, read from where that
 * call stopped (`readUpTo`, in bytes). The log is appended to across restarts; one shorter
 * than that was made afresh, and is read from its start.
 */
function newErrorLines(dir: string, node: NodeState, readUpTo: Map<string, number>): string {
  const file = errorLog(dir, node);
  if (!existsSync(file)) return "";
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const last = readUpTo.get(node.name) ?? 0;
    const from = size >= last ? last : 0;
    const appended = Buffer.alloc(size - from);
    const read = readSync(fd, appended, 0, appended.length, from);
    const wholeLines = appended.subarray(0, appended.lastIndexOf(0x0a, read - 1) + 1);
    readUpTo.set(node.name, from + wholeLines.length);
    return wholeLines.toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/**
 * Starts again any process of the cluster that exited (18.16 was seen to crash after losing
 * its ZooKeeper session), and restarts a node whose distributed-DDL worker ended
 * (DDL_WORKER_ENDED): 18.16 has no other way to start that thread again, and until then every
 * `ON CLUSTER` statement waits for the node up to `distributed_ddl_task_timeout`. This is
 * what an operator of 18.16 has to do too (the packaged server's systemd unit only covers an
 * exit). `onRestart` is told of each process started again and why, before it is.
 */
export function superviseCluster(dirArg: string, onRestart: (name: string, why: string) => void): ClusterSupervisor {
  const dir = resolve(dirArg);
  let stopped = false;
  let check: Promise<void> = Promise.resolve();
  const errorsReadUpTo = new Map<string, number>();
  const restartWhereNeeded = async () => {
    const state = readClusterState(dir);
    if (!state || stopped) return;
    if (!isOurs(state.zookeeper.pid, join(zookeeperDir(dir), "zoo.cfg"))) {
      onRestart("zookeeper", "exited");
      await startZooKeeper(dir);
    }
    for (const node of state.nodes) {
      if (stopped) return;
      const errors = newErrorLines(dir, node, errorsReadUpTo);
      if (!isOurs(node.pid, join(dir, node.name, "config.xml"))) {
        onRestart(node.name, `exited; the end of its error log:\n${errors.split("\n").slice(-20).join("\n")}`);
      } else if (DDL_WORKER_ENDED.test(errors)) {
        onRestart(node.name, `its distributed-DDL worker ended:\n${errors.split("\n").filter((l) => l.includes("DDLWorker")).join("\n")}`);
        await stopNode(dir, node.name);
      } else continue;
      await startNode(dir, node.name);
    }
  };
  // The error logs' lines from before the supervision are not its business.
  for (const node of readClusterState(dir)?.nodes ?? []) if (existsSync(errorLog(dir, node))) errorsReadUpTo.set(node.name, statSync(errorLog(dir, node)).size);
  const timer = setInterval(() => {
    check = check.then(restartWhereNeeded).catch((err: unknown) => onRestart("(a restart)", `failed: ${errorText(err)}`));
  }, SUPERVISE_PERIOD_MS);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await check;
    },
  };
}

export async function clusterStatus(dirArg: string): Promise<ProcessStatus[]> {
  const dir = resolve(dirArg);
  const state = readClusterState(dir);
  if (!state) return [];
  const zkRunning = isOurs(state.zookeeper.pid, join(zookeeperDir(dir), "zoo.cfg"));
  const statuses: ProcessStatus[] = [{ name: "zookeeper", pid: state.zookeeper.pid, running: zkRunning, ready: zkRunning && (await zookeeperAnswers(state.zookeeper.port)) }];
  for (const node of state.nodes) {
    const running = isOurs(node.pid, join(dir, node.name, "config.xml"));
    statuses.push({ name: node.name, pid: node.pid, running, ready: running && (await nodeReady(node)) });
  }
  return statuses;
}
