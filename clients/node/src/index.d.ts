// Types for @holistic-eval/client. Messages are the protobuf-es types generated into gen/.
import type { Metadata, ChannelCredentials, ServiceDefinition } from "@grpc/grpc-js";
import type { Prediction } from "../gen/holistic/v1/prediction_pb.js";
import type { ModelSummary, Profile } from "../gen/holistic/v1/profile_pb.js";
import type {
  CompareProfilesResponse, DeleteModelResponse, DeleteTenantDataResponse, ListModelsResponse, SubmitPredictionsResponse,
} from "../gen/holistic/v1/evaluation_service_pb.js";

export { PredictionSchema, PerturbationFamily, Task } from "../gen/holistic/v1/prediction_pb.js";
export { DimensionKind, ProfileSchema, WindowPreset } from "../gen/holistic/v1/profile_pb.js";
export { Decision, Verdict, CompareProfilesResponseSchema } from "../gen/holistic/v1/evaluation_service_pb.js";
export { create, fromJson, toJson, toJsonString } from "@bufbuild/protobuf";

export type Window = "all" | "15m" | "1h" | "24h" | "1d" | "7d" | { start: Date; end: Date };
export type Line = { number: number; prediction?: Prediction; error?: string };
export interface SubmitReport {
  accepted: number;
  duplicates: number;
  batches: number;
  rejected: { line: number; field: string; reason: string }[];
}
export interface ClientOptions {
  token?: string;
  timeoutMs?: number;
  maxAttempts?: number;
  credentials?: ChannelCredentials;
  onRetry?: (info: { attempt: number; delayMs: number; error: HolisticError }) => void;
  sleep?: (ms: number) => Promise<unknown>;
}

export declare const WINDOWS: Record<string, number>;
export declare function contentBatchId(model: string, predictions: Prediction[]): string;
export declare class HolisticClient {
  constructor(target?: string, options?: ClientOptions);
  readonly metadata: Metadata;
  close(): void;
  submit(predictions: Prediction[], options?: { model?: string; batchId?: string }): Promise<SubmitPredictionsResponse>;
  submitLines(lines: Iterable<Line> | AsyncIterable<Line>, options?: { batchSize?: number; model?: string; onBatch?: (n: number) => void }): Promise<SubmitReport>;
  submitFile(path: string, options?: { batchSize?: number; model?: string; onBatch?: (n: number) => void }): Promise<SubmitReport>;
  getProfile(model: string, window?: Window): Promise<Profile>;
  watchProfile(model: string, window?: Window, options?: { signal?: AbortSignal }): AsyncGenerator<Profile>;
  listModels(): Promise<ModelSummary[]>;
  listModelsPage(options?: { pageSize?: number; pageToken?: string }): Promise<ListModelsResponse>;
  deleteModel(model: string, options?: { tenant?: string }): Promise<DeleteModelResponse>;
  deleteTenantData(tenant: string): Promise<DeleteTenantDataResponse>;
  compareProfiles(model: string, options?: {
    otherModel?: string; window?: Window; margin?: number; level?: number; failOn?: string[]; multiplicity?: "holm" | "bh";
  }): Promise<CompareProfilesResponse>;
}

export declare class HolisticError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly serverMessage: string;
  readonly details: unknown[];
}
export declare class InvalidPredictionsError extends HolisticError {
  readonly violations: { field: string; description: string }[];
}
export declare function fromServiceError(err: unknown): unknown;
export declare function statusDetails(err: unknown): unknown[];
export declare function retryDelayMs(err: unknown): number | null;
export declare function readPredictions(path: string): AsyncGenerator<Line>;
export declare function predictionToJsonLine(prediction: Prediction): string;
export declare function serviceDefinition(service: unknown): ServiceDefinition;
export declare const evaluationServiceDefinition: ServiceDefinition;
