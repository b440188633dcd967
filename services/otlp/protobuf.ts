/**
 * OTLP protobuf: the schema from `proto/` (loaded once, at module init), for the answers'
 * encoding (and the tests' and benches' requests) and the OTLP/gRPC services' method paths.
 * Requests are read by protobufReader.ts.
 */
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import protobuf from "protobufjs";

const PROTO_DIR = fileURLToPath(new URL("../../proto/", import.meta.url));
const PROTO_FILES = ["opentelemetry/proto/collector/trace/v1/trace_service.proto", "opentelemetry/proto/collector/logs/v1/logs_service.proto", "google/rpc/status.proto", "google/rpc/error_details.proto"];

function loadSchema(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  root.loadSync(PROTO_FILES, { keepCase: true });
  root.resolveAll();
  return root;
}

const schema = loadSchema();

export const ExportTraceServiceRequest = schema.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");
export const ExportTraceServiceResponse = schema.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse");
export const ExportLogsServiceRequest = schema.lookupType("opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest");
export const ExportLogsServiceResponse = schema.lookupType("opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse");
export const RpcStatus = schema.lookupType("google.rpc.Status");
export const RetryInfo = schema.lookupType("google.rpc.RetryInfo");
export const TraceService = schema.lookupService("opentelemetry.proto.collector.trace.v1.TraceService");
export const LogsService = schema.lookupService("opentelemetry.proto.collector.logs.v1.LogsService");

/** The HTTP/2 path of a gRPC method: `/<package>.<Service>/<Method>`. */
export const grpcMethodPath = (service: protobuf.Service, method: string): string => `/${service.fullName.replace(/^\./, "")}/${service.methods[method]!.name}`;
