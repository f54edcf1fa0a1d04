// A block whose content may be more than its room and scroll inside it: a model's output,
// a task's text, the event log, a wide table on a phone. While its content overflows it
// takes the keyboard's focus (so the arrow keys scroll it) as a region named `label` (so
// the focus says what it is on): axe's scrollable-region-focusable. While it fits, it is
// a plain block and no tab stop.
import { useCallback, useEffect, useRef, useState, type HTMLAttributes } from "react";

type Tag = "div" | "pre" | "p";

interface Props extends HTMLAttributes<HTMLElement> {
  as?: Tag;
  /** What the region holds, said when the keyboard's focus reaches it. */
  label: string;
  /** Scroll to the end whenever this changes (a log that grows); undefined: never. */
  followEnd?: unknown;
}

/** Whether `node`'s content is larger than its box, kept up to date as either changes. */
function useOverflows(node: HTMLElement | null): boolean {
  const [overflows, setOverflows] = useState(false);
  useEffect(() => {
    if (!node || typeof ResizeObserver === "undefined") return;
    const check = () =>
      setOverflows(node.scrollHeight > node.clientHeight + 1 || node.scrollWidth > node.clientWidth + 1);
    const resized = new ResizeObserver(check); // also called once at the start
    resized.observe(node);
    for (const child of node.children) resized.observe(child);
    const changed = new MutationObserver(check);
    changed.observe(node, { childList: true, characterData: true, subtree: true });
    return () => {
      resized.disconnect();
      changed.disconnect();
    };
  }, [node]);
  return overflows;
}

export function Scrollable({ as: Tag = "div", label, followEnd, ...props }: Props) {
  const element = useRef<HTMLElement | null>(null);
  const [node, setNode] = useState<HTMLElement | null>(null);
  const attach = useCallback((el: HTMLElement | null) => {
    element.current = el;
    setNode(el);
  }, []);
  const overflows = useOverflows(node);
  useEffect(() => {
    if (element.current && followEnd !== undefined) element.current.scrollTop = element.current.scrollHeight;
  }, [followEnd]);
  return (
    <Tag
      {...props}
      ref={attach}
      tabIndex={overflows ? 0 : undefined}
      role={overflows ? "region" : undefined}
      aria-label={overflows ? label : undefined}
    />
  );
}
