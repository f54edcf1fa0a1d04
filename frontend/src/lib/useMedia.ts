import { useSyncExternalStore } from "react";

/** Whether a CSS media query matches now; the component renders again when that changes. */
export function useMedia(queryText: string): boolean {
  return useSyncExternalStore(
    (changed) => {
      const list = window.matchMedia?.(queryText);
      list?.addEventListener("change", changed);
      return () => list?.removeEventListener("change", changed);
    },
    () => window.matchMedia?.(queryText).matches ?? false,
    () => false,
  );
}
