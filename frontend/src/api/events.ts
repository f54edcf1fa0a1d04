// Names for the WebSocket messages' schemas. messages.d.ts is generated from messages.json
// (`make api-types`), which a backend test keeps equal to studio/event_schemas.py, where
// the server defines each message and each run event's payload.
import type { components } from "./messages";

type S = components["schemas"];

/** One message of /ws/runs/<id>/: a run event; its `type` says which payload it carries. */
export type RunEventMessage = S["RunEventMessage"];
export type RunEventType = RunEventMessage["type"];
/** The message of one event type, e.g. `RunEventOf<"node.created">`. */
export type RunEventOf<T extends RunEventType> = Extract<RunEventMessage, { type: T }>;

export type TrainingProgress = S["TrainingProgress"];
export type EvaluationProgress = S["EvaluationProgress"];
