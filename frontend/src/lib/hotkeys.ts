// Single-key shortcuts for a page: `useHotkeys({ A: pickLeft, Enter: submit })`.
//
// Keys are matched on `event.key`; letters are case-insensitive (caps lock and Shift
// still work). A key is ignored when:
// - it is typed into a text field, a textarea, a select or an editable element;
// - Ctrl, Meta (Cmd) or Alt is held (those belong to the browser and the system);
// - it auto-repeats (holding Enter must not submit twice);
// - it is Enter or Space on a button, link or other control, which acts on it itself.
import { useEffect, useRef } from "react";

export type HotkeyHandler = (event: KeyboardEvent) => void;
export type HotkeyMap = Record<string, HotkeyHandler>;

const TYPING_INPUT_TYPES = new Set([
  "text",
  "search",
  "email",
  "number",
  "password",
  "tel",
  "url",
  "date",
  "datetime-local",
  "month",
  "time",
  "week",
]);

/** The name a key is matched by: one character upper-cased, anything else as is ("Enter", "Escape"). */
export function keyName(key: string): string {
  return key.length === 1 ? key.toUpperCase() : key;
}

/** Whether keys pressed on this element are text the user is typing. */
export function isTypingTarget(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable || target.closest("[contenteditable=''], [contenteditable='true']")) return true;
  const tag = target.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  if (tag === "INPUT") {
    const type = ((target as HTMLInputElement).type || "text").toLowerCase();
    return TYPING_INPUT_TYPES.has(type);
  }
  return false;
}

/** Whether the element does something itself on Enter or Space (a button, link, checkbox…). */
function actsOnActivation(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return Boolean(target.closest("button, a[href], input, summary, [role='button'], [role='link'], [role='checkbox']"));
}

/** Whether a hotkey should handle this keydown at all. */
export function isHotkeyEvent(event: KeyboardEvent): boolean {
  if (event.defaultPrevented || event.repeat || event.isComposing) return false;
  if (event.ctrlKey || event.metaKey || event.altKey) return false;
  if (isTypingTarget(event.target)) return false;
  if ((event.key === "Enter" || event.key === " ") && actsOnActivation(event.target)) return false;
  return true;
}

/**
 * Calls `map[key]` on a keydown anywhere in the window (see the rules above), and stops the
 * browser's own handling of that key. `enabled: false` turns every shortcut off.
 */
export function useHotkeys(map: HotkeyMap, enabled = true): void {
  const latest = useRef<Record<string, HotkeyHandler>>({});
  // Always the latest handlers, without re-subscribing on every render.
  useEffect(() => {
    const normalized: Record<string, HotkeyHandler> = {};
    for (const [key, handler] of Object.entries(map)) normalized[keyName(key)] = handler;
    latest.current = normalized;
  });

  useEffect(() => {
    if (!enabled) return;
    const onKeyDown = (event: KeyboardEvent) => {
      if (!isHotkeyEvent(event)) return;
      const handler = latest.current[keyName(event.key)];
      if (!handler) return;
      event.preventDefault();
      handler(event);
    };
    window.addEventListener("keydown", onKeyDown);
    return () => window.removeEventListener("keydown", onKeyDown);
  }, [enabled]);
}
