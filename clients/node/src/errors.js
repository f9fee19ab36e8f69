// Readable errors from gRPC statuses, with the google.rpc details (grpc-status-details-bin) decoded.
import * as grpc from "@grpc/grpc-js";
import { createRegistry, fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { BadRequestSchema, QuotaFailureSchema, RetryInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../gen/google/rpc/status_pb.js";

const DETAILS = createRegistry(BadRequestSchema, RetryInfoSchema, QuotaFailureSchema);
const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([name, code]) => [code, name]));

/** The google.rpc detail messages a status carries (BadRequest, RetryInfo, QuotaFailure). */
export function statusDetails(err) {
  const raw = err?.metadata?.get?.("grpc-status-details-bin")?.[0];
  if (!raw) return [];
  const status = fromBinary(StatusSchema, raw);
  return status.details.map((any) => anyUnpack(any, DETAILS)).filter(Boolean);
}

/** The server's RetryInfo delay in milliseconds, or null when the status carries none. */
export function retryDelayMs(err) {
  const info = statusDetails(err).find((d) => d.$typeName === "google.rpc.RetryInfo");
  if (!info?.retryDelay) return null;
  return Number(info.retryDelay.seconds) * 1000 + info.retryDelay.nanos / 1e6;
}

export class HolisticError extends Error {
  constructor(code, message, details = []) {
    super(`${CODE_NAMES[code] ?? code}: ${message}`);
    this.name = "HolisticError";
    this.code = code;
    this.codeName = CODE_NAMES[code] ?? String(code);
    this.serverMessage = message;
    this.details = details;
  }
}

// How grpc-js words a connection that was never made (refused, unknown host, no route, TLS): the gateway
// was not reached, as opposed to a gateway that answered UNAVAILABLE.
const CONNECT_FAILURE = /no connection established|ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|name resolution|failed to connect|handshake/i;

/** True for an UNAVAILABLE that says the connection was never made. */
export function isConnectFailure(err) {
  return err?.code === grpc.status.UNAVAILABLE && CONNECT_FAILURE.test(err.details ?? err.message ?? "");
}

/** The gateway could not be reached at all: the address and the cause, at once. */
export class UnreachableError extends HolisticError {
  constructor(target, cause) {
    super(grpc.status.UNAVAILABLE, `cannot reach the gateway at ${target}: ${cause} (is it running? --wait-for-ready waits for it)`);
    this.name = "UnreachableError";
    this.target = target;
    this.cause = cause;
  }
}

// The system error a failed connect names, in the words the Python and Go clients print.
const CAUSES = {
  ECONNREFUSED: "Connection refused", ENOTFOUND: "Domain name not found", EHOSTUNREACH: "No route to host",
  ENETUNREACH: "Network is unreachable", ETIMEDOUT: "Connection timed out",
};

/** The most specific part of grpc-js's message: "Connection refused", not its whole chain. */
export function connectCause(err) {
  const text = err?.details ?? err?.message ?? "";
  const code = text.match(/\b(E[A-Z]{4,})\b/)?.[1];
  if (code && CAUSES[code]) return CAUSES[code];
  return text.replace(/\s*\(is it running.*$/, "").trim();
}

/** INVALID_ARGUMENT with its field violations: [{ field: "predictions[3].confidence", description }]. */
export class InvalidPredictionsError extends HolisticError {
  constructor(code, message, details, violations) {
    super(code, message, details);
    this.name = "InvalidPredictionsError";
    this.violations = violations;
    if (violations.length) {
      this.message += "\n" + violations.map((v) => `  ${v.field}: ${v.description}`).join("\n");
    }
  }
}

export function fromServiceError(err) {
  if (err instanceof HolisticError) return err;
  if (typeof err?.code !== "number") return err;
  const details = statusDetails(err);
  const message = err.details ?? err.message ?? "";
  if (err.code === grpc.status.INVALID_ARGUMENT) {
    const violations = details
      .filter((d) => d.$typeName === "google.rpc.BadRequest")
      .flatMap((d) => d.fieldViolations.map((v) => ({ field: v.field, description: v.description })));
    return new InvalidPredictionsError(err.code, message, details, violations);
  }
  return new HolisticError(err.code, message, details);
}
