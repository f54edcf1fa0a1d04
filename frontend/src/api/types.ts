// Names for the API's schemas. schema.d.ts is generated from openapi.json (`make api-types`),
// which a backend test keeps equal to the live /api/openapi.json. The WebSocket messages'
// types are in events.ts.
import type { components } from "./schema";

type S = components["schemas"];

export type Me = S["MeOut"];
export type Run = S["RunOut"];
export type RunIn = S["RunIn"];
export type Tree = S["TreeOut"];
export type TreeNode = S["NodeOut"];
export type Attempt = S["AttemptOut"];
export type RunEvent = S["EventOut"];
export type EventPage = S["EventPageOut"];
export type Task = S["TaskOut"];
export type Pool = S["PoolOut"];
export type PoolPatch = S["PoolPatch"];
export type Endpoint = S["EndpointOut"];
export type Primitive = S["PrimitiveOut"];
export type Admissibility = S["AdmissibilityOut"];
export type TrainingJob = S["TrainingJobOut"];
export type TrainingJobDetail = S["TrainingJobDetailOut"];
export type Checkpoint = S["CheckpointOut"];
export type Queue = S["QueueOut"];
export type QueueItem = S["QueueItemOut"];
export type Pair = S["PairOut"];
export type Agreement = S["AgreementOut"];
export type ImportResult = S["ImportOut"];
export type User = S["UserOut"];

export type Role = "viewer" | "labeler" | "researcher" | "admin";
export type Options = S["OptionsOut"];
export type RecordedItem = S["RecordedItemOut"];

export type Evaluation = S["EvaluationOut"];
export type EvaluationDetail = S["EvaluationDetailOut"];
export type EvaluationIn = S["EvaluationIn"];
export type EvaluationOptions = S["EvaluationOptionsOut"];

export type Collection = S["CollectionOut"];
export type ResumeIn = S["ResumeIn"];
export type CollectionPair = S["CollectionPairIn"];
export type CollectionIn = S["CollectionIn"];
export type TasksMade = S["TasksMadeOut"];
