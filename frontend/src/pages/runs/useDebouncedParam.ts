import { useEffect, useRef, useState } from "react";

/**
 * A text filter that follows the URL's `value` and writes back to it (`write`) a moment
 * after typing stops. What was typed shows while the URL still holds the value it was
 * typed over; once the URL changes (the write, or back, or a reset) the URL's value shows.
 */
export function useDebouncedParam(value: string, write: (next: string) => void, delay = 350) {
  const [typed, setTyped] = useState<{ text: string; over: string } | null>(null);
  const pending = typed !== null && typed.over === value && typed.text !== value ? typed.text : null;
  const writer = useRef(write);
  useEffect(() => {
    writer.current = write;
  });
  useEffect(() => {
    if (pending === null) return;
    const timer = window.setTimeout(() => writer.current(pending), delay);
    return () => window.clearTimeout(timer);
  }, [pending, delay]);
  const text = typed !== null && typed.over === value ? typed.text : value;
  return [text, (next: string) => setTyped({ text: next, over: value })] as const;
}
