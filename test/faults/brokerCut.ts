import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";

/**
 * A proxy in front of each broker of a Kafka cluster on loopback (librdkafka's mock: all its
 * brokers are one process, so none can be killed alone), which a test cuts and restores as if
 * that broker crashed and came back on its address: `cut(i)` closes the listener of broker i
 * and destroys every connection through it (both sides), `restore(i)` listens again on the
 * same port.
 *
 * Kafka clients connect to the brokers that Metadata and FindCoordinator answers advertise,
 * which are the upstream ports: the proxy reads every response frame and rewrites each
 * advertised upstream port into its proxy's (the host, 127.0.0.1, stays, so no size changes).
 * A response is known by the correlation id of the request it answers, so requests are read
 * too (forwarded unchanged). Only the non-flexible versions of those two responses are parsed
 * (KafkaJS 2.x sends Metadata v0-v6 and FindCoordinator v0-v2); any other version of them
 * closes the connection and is recorded in `protocolErrors` rather than passed on unrewritten.
 */
export interface BrokerCut {
  /** The proxies' addresses, as KAFKA_BROKERS takes them (`127.0.0.1:p1,127.0.0.1:p2,...`), in the upstream's order. */
  readonly brokers: string;
  /** What could not be rewritten (a test expects none). */
  readonly protocolErrors: string[];
  cut(i: number): Promise<void>;
  restore(i: number): Promise<void>;
  stop(): Promise<void>;
}

const METADATA = 3;
const FIND_COORDINATOR = 10;
/** The first flexible version (compact strings, tagged fields) of each response rewritten. */
const FIRST_FLEXIBLE: Record<number, number> = { [METADATA]: 9, [FIND_COORDINATOR]: 3 };

/** What a response is read by: the API and version of the request it answers. */
export interface RequestHeader {
  readonly apiKey: number;
  readonly apiVersion: number;
}

/** Splits a byte stream into size-prefixed frames (int32 size, then that many bytes), whole. */
class FrameSplitter {
  private chunks: Buffer[] = [];
  private length = 0;
  /** The current frame's bytes, size field included; -1 until its size is read. */
  private frameLength = -1;

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.length += chunk.length;
    const frames: Buffer[] = [];
    for (;;) {
      if (this.frameLength < 0) {
        if (this.length < 4) break;
        this.frameLength = 4 + this.joined().readInt32BE(0);
      }
      if (this.length < this.frameLength) break;
      const all = this.joined();
      frames.push(all.subarray(0, this.frameLength));
      const rest = all.subarray(this.frameLength);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.length = rest.length;
      this.frameLength = -1;
    }
    return frames;
  }

  /** The bytes held, as one buffer (joined once a frame is whole, so a large frame is copied once). */
  private joined(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.length)];
    return this.chunks[0]!;
  }
}

/** Reads a frame's fields in order, from an offset. */
class Cursor {
  constructor(private readonly frame: Buffer, public at: number) {}
  skip(bytes: number): void {
    this.at += bytes;
  }
  int32(): number {
    const v = this.frame.readInt32BE(this.at);
    this.at += 4;
    return v;
  }
  /** A string or nullable string (int16 length, -1 for null). */
  skipString(): void {
    const length = this.frame.readInt16BE(this.at);
    this.at += 2 + Math.max(0, length);
  }
}

/**
 * Rewrites, in place, the broker ports a Metadata or FindCoordinator response advertises
 * (`ports`: upstream port to proxy port). Throws on a version whose layout is not read here.
 */
export function rewriteAdvertisedPorts(frame: Buffer, request: RequestHeader, ports: ReadonlyMap<number, number>): void {
  const { apiKey, apiVersion } = request;
  if (apiKey !== METADATA && apiKey !== FIND_COORDINATOR) return;
  if (apiVersion >= FIRST_FLEXIBLE[apiKey]!) throw new Error(`api_key ${apiKey} v${apiVersion} is a flexible version: its broker list is not rewritten here`);
  // int32 size, int32 correlation_id, then the body.
  const body = new Cursor(frame, 8);
  const rewritePort = () => {
    const port = frame.readInt32BE(body.at);
    const proxied = ports.get(port);
    if (proxied !== undefined) frame.writeInt32BE(proxied, body.at);
    body.skip(4);
  };
  if (apiKey === METADATA) {
    if (apiVersion >= 3) body.skip(4); // throttle_time_ms
    const count = body.int32();
    for (let b = 0; b < count; b++) {
      body.skip(4); // node_id
      body.skipString(); // host
      rewritePort();
      if (apiVersion >= 1) body.skipString(); // rack
    }
    return;
  }
  if (apiVersion >= 1) {
    body.skip(4 + 2); // throttle_time_ms, error_code
    body.skipString(); // error_message
  } else {
    body.skip(2); // error_code
  }
  body.skip(4); // node_id
  body.skipString(); // host
  rewritePort();
}

/** One broker's proxy: its listener, on a port kept across cuts, and the connections through it. */
class BrokerProxy {
  private readonly server: Server;
  private readonly pairs = new Set<Socket>();
  /** 0 until the first listen, which picks a free port; every listen after takes it again. */
  port = 0;

  constructor(
    readonly upstreamPort: number,
    private readonly ports: ReadonlyMap<number, number>,
    private readonly protocolErrors: string[],
  ) {
    this.server = createServer((client) => this.accept(client));
  }

  listen(): Promise<void> {
    return new Promise((done, fail) => {
      this.server.once("error", fail);
      this.server.listen(this.port, "127.0.0.1", () => {
        this.server.off("error", fail);
        this.port = (this.server.address() as AddressInfo).port;
        done();
      });
    });
  }

  /** No new connection, and every one through it destroyed: to its clients, the broker crashed. */
  async close(): Promise<void> {
    const closed = new Promise<void>((done) => (this.server.listening ? this.server.close(() => done()) : done()));
    for (const socket of this.pairs) socket.destroy();
    await closed;
  }

  private accept(client: Socket): void {
    const broker = connect(this.upstreamPort, "127.0.0.1");
    const requests = new Map<number, RequestHeader>();
    const fromClient = new FrameSplitter();
    const fromBroker = new FrameSplitter();
    const fail = (err: unknown) => {
      this.protocolErrors.push(`broker port ${this.upstreamPort}: ${err instanceof Error ? err.message : String(err)}`);
      client.destroy();
      broker.destroy();
    };
    this.pipe(client, broker, (chunk) => {
      // int32 size, int16 api_key, int16 api_version, int32 correlation_id
      for (const frame of fromClient.push(chunk)) requests.set(frame.readInt32BE(8), { apiKey: frame.readInt16BE(4), apiVersion: frame.readInt16BE(6) });
      return chunk;
    }, fail);
    this.pipe(broker, client, (chunk) => {
      const frames = fromBroker.push(chunk);
      for (const frame of frames) {
        const correlationId = frame.readInt32BE(4);
        const request = requests.get(correlationId);
        requests.delete(correlationId);
        if (request) rewriteAdvertisedPorts(frame, request, this.ports);
      }
      return frames.length === 1 ? frames[0]! : Buffer.concat(frames);
    }, fail);
  }

  /** Forwards `from`'s bytes to `to`, each chunk through `transform` (with back-pressure); either side's end ends both. */
  private pipe(from: Socket, to: Socket, transform: (chunk: Buffer) => Buffer, fail: (err: unknown) => void): void {
    this.pairs.add(from);
    from.on("data", (chunk: Buffer) => {
      let out: Buffer;
      try {
        out = transform(chunk);
      } catch (err) {
        fail(err);
        return;
      }
      if (out.length > 0 && !to.write(out)) from.pause();
    });
    to.on("drain", () => from.resume());
    from.on("close", () => {
      this.pairs.delete(from);
      to.destroy();
    });
    from.on("error", () => to.destroy());
  }
}

/** Proxies in front of `brokers` (`127.0.0.1:p1,127.0.0.1:p2,...`), listening once this resolves. */
export async function startBrokerCut(brokers: string): Promise<BrokerCut> {
  const upstreamPorts = brokers.split(",").map((address) => {
    const [host, port] = address.split(":");
    if (host !== "127.0.0.1" || !port) throw new Error(`brokerCut proxies brokers on 127.0.0.1 only (the rewrite keeps the host): ${address}`);
    return Number(port);
  });
  // Filled once every proxy listens, before this resolves: no client connects earlier.
  const ports = new Map<number, number>();
  const protocolErrors: string[] = [];
  const proxies = upstreamPorts.map((upstream) => new BrokerProxy(upstream, ports, protocolErrors));
  for (const proxy of proxies) {
    await proxy.listen();
    ports.set(proxy.upstreamPort, proxy.port);
  }
  const at = (i: number) => {
    const proxy = proxies[i];
    if (!proxy) throw new Error(`no broker ${i} (there are ${proxies.length})`);
    return proxy;
  };
  return {
    brokers: proxies.map((p) => `127.0.0.1:${p.port}`).join(","),
    protocolErrors,
    cut: (i) => at(i).close(),
    restore: (i) => at(i).listen(),
    stop: async () => {
      for (const proxy of proxies) await proxy.close();
    },
  };
}
