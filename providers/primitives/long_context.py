"""`long_context`: chunk the document, map each chunk to notes, reduce the notes to an answer."""

from __future__ import annotations

from orchestrator.core.envelope import Envelope
from orchestrator.outcomes import CHARS_PER_TOKEN
from providers.llm import LLMClient
from providers.primitives.answers import final_answer
from providers.primitives.base import Params, PrimitiveInput, primitive

MAP = (
    "Read this part of a document and write down everything in it that helps answer the question. "
    "If nothing does, reply 'NOTHING'.\n\nQuestion: {question}\n\nPart {index} of {total}:\n{chunk}"
)
REDUCE = (
    "Answer the question from these notes, taken from the parts of a document. "
    "End with a last line 'Answer: <final answer>'.\n\nQuestion: {question}\n\nNotes:\n{notes}"
)


def chunks(text: str, size_chars: int, overlap_chars: int) -> list[str]:
    """Pieces of about `size_chars`, cut at whitespace where possible, overlapping a little."""
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + size_chars)
        if end < len(text):
            cut = text.rfind(" ", start + size_chars // 2, end)
            end = cut if cut > start else end
        pieces.append(text[start:end].strip())
        if end >= len(text):
            break
        start = max(end - overlap_chars, start + 1)
    return [piece for piece in pieces if piece]


@primitive("long_context", extract=final_answer)
def long_context(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    size = int(params.get("chunk_tokens", 2000)) * CHARS_PER_TOKEN
    document = task.context or task.prompt
    parts = chunks(document, size, overlap_chars=size // 10)
    notes = []
    for index, chunk in enumerate(parts, start=1):
        content = MAP.format(question=task.prompt, index=index, total=len(parts), chunk=chunk)
        text = llm.complete([{"role": "user", "content": content}], primitive="long_context").text.strip()
        if text and text.upper() != "NOTHING":
            notes.append(f"[part {index}] {text}")
    reduce = REDUCE.format(question=task.prompt, notes="\n".join(notes) or "(no part was relevant)")
    completion = llm.complete([{"role": "user", "content": reduce}], primitive="long_context")
    return Envelope(
        status="ok",
        output=completion.text,
        answer=final_answer(completion.text),
        artifacts={"chunks": len(parts), "relevant_chunks": len(notes)},
    )
