// A background job's live progress over its WebSocket: /ws/training/<id>/ (a training job)
// or /ws/evaluations/<id>/ (an evaluation). Each sends the job as it stands, then every
// progress update (studio/consumers.py).
import { wsUrl } from "../api/client";

/**
 * Watch a job at `path`; `onProgress` gets every progress message. Returns a function that
 * stops watching. `onLost` is called when the socket closes unasked (refused, or the server
 * went away), so the caller can fall back to polling.
 */
export function watchJob<T extends { kind: "progress" }>(
  path: string,
  onProgress: (message: T) => void,
  onLost: (code: number) => void,
): () => void {
  let stopped = false;
  let socket: WebSocket;
  try {
    socket = new WebSocket(wsUrl(path));
  } catch {
    onLost(0);
    return () => undefined;
  }
  socket.onmessage = (event: MessageEvent<string>) => {
    try {
      const message = JSON.parse(event.data) as T;
      if (message.kind === "progress") onProgress(message);
    } catch {
      // not JSON: ignore
    }
  };
  socket.onclose = (event) => {
    if (!stopped) onLost(event.code);
  };
  return () => {
    stopped = true;
    socket.close();
  };
}
