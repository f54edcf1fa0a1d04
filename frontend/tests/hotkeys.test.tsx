import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useState } from "react";
import { describe, expect, it, vi } from "vitest";

import { isTypingTarget, keyName, useHotkeys, type HotkeyMap } from "../src/lib/hotkeys";

function Harness({ map, enabled = true }: { map: HotkeyMap; enabled?: boolean }) {
  useHotkeys(map, enabled);
  return (
    <div>
      <input aria-label="text" />
      <textarea aria-label="notes" />
      <select aria-label="pick">
        <option>a</option>
        <option>b</option>
      </select>
      <input type="checkbox" aria-label="tick" />
      <button type="button">Press</button>
      <div contentEditable suppressContentEditableWarning aria-label="editable">
        x
      </div>
    </div>
  );
}

function handlers() {
  return { A: vi.fn(), B: vi.fn(), T: vi.fn(), S: vi.fn(), Enter: vi.fn() };
}

describe("useHotkeys", () => {
  it("fires on A, B, T, S and Enter, whatever the case", async () => {
    const user = userEvent.setup();
    const map = handlers();
    render(<Harness map={map} />);
    await user.keyboard("a");
    await user.keyboard("B");
    await user.keyboard("t");
    await user.keyboard("s");
    await user.keyboard("{Enter}");
    expect(map.A).toHaveBeenCalledTimes(1);
    expect(map.B).toHaveBeenCalledTimes(1);
    expect(map.T).toHaveBeenCalledTimes(1);
    expect(map.S).toHaveBeenCalledTimes(1);
    expect(map.Enter).toHaveBeenCalledTimes(1);
  });

  it("ignores other keys", async () => {
    const user = userEvent.setup();
    const map = handlers();
    render(<Harness map={map} />);
    await user.keyboard("xyz{Escape}{ArrowDown}");
    for (const fn of Object.values(map)) expect(fn).not.toHaveBeenCalled();
  });

  it("ignores keys typed into inputs, textareas, selects and editable text", async () => {
    const user = userEvent.setup();
    const map = handlers();
    render(<Harness map={map} />);
    const input = screen.getByLabelText<HTMLInputElement>("text");
    await user.type(input, "abts{Enter}");
    expect(input.value).toBe("abts");
    await user.type(screen.getByLabelText("notes"), "bats{Enter}");
    screen.getByLabelText("pick").focus();
    await user.keyboard("b");
    await user.click(screen.getByLabelText("editable"));
    await user.keyboard("ab");
    for (const fn of Object.values(map)) expect(fn).not.toHaveBeenCalled();
  });

  it("ignores keys held with Ctrl, Meta or Alt", async () => {
    const user = userEvent.setup();
    const map = handlers();
    render(<Harness map={map} />);
    await user.keyboard("{Control>}a{/Control}");
    await user.keyboard("{Meta>}b{/Meta}");
    await user.keyboard("{Alt>}t{/Alt}");
    await user.keyboard("{Control>}{Enter}{/Control}");
    for (const fn of Object.values(map)) expect(fn).not.toHaveBeenCalled();
    // and works again once the modifier is released
    await user.keyboard("a");
    expect(map.A).toHaveBeenCalledTimes(1);
  });

  it("leaves Enter on a button to the button, but letters still work there", async () => {
    const user = userEvent.setup();
    const map = handlers();
    render(<Harness map={map} />);
    screen.getByRole("button", { name: "Press" }).focus();
    await user.keyboard("{Enter}");
    expect(map.Enter).not.toHaveBeenCalled();
    await user.keyboard("b");
    expect(map.B).toHaveBeenCalledTimes(1);
    // a checkbox is not a text field: letters work on it too
    screen.getByLabelText("tick").focus();
    await user.keyboard("s");
    expect(map.S).toHaveBeenCalledTimes(1);
  });

  it("does nothing when disabled, and uses the latest handlers", async () => {
    const user = userEvent.setup();
    const first = vi.fn();
    const second = vi.fn();
    function Switcher() {
      const [on, setOn] = useState(true);
      const [which, setWhich] = useState(1);
      useHotkeys({ A: which === 1 ? first : second }, on);
      return (
        <>
          <button type="button" onClick={() => setOn(!on)}>
            toggle
          </button>
          <button type="button" onClick={() => setWhich(2)}>
            swap
          </button>
        </>
      );
    }
    render(<Switcher />);
    await user.keyboard("a");
    expect(first).toHaveBeenCalledTimes(1);
    await user.click(screen.getByRole("button", { name: "swap" }));
    await user.keyboard("a");
    expect(second).toHaveBeenCalledTimes(1);
    await user.click(screen.getByRole("button", { name: "toggle" }));
    await user.keyboard("a");
    expect(first).toHaveBeenCalledTimes(1);
    expect(second).toHaveBeenCalledTimes(1);
  });

  it("names keys and text targets", () => {
    expect(keyName("a")).toBe("A");
    expect(keyName("Enter")).toBe("Enter");
    const input = document.createElement("input");
    expect(isTypingTarget(input)).toBe(true);
    const box = document.createElement("input");
    box.type = "checkbox";
    expect(isTypingTarget(box)).toBe(false);
    expect(isTypingTarget(document.createElement("button"))).toBe(false);
    expect(isTypingTarget(document.createElement("textarea"))).toBe(true);
  });
});
