"""`self_consistency`: k chain-of-thought samples, then a majority vote (k from params)."""

from collections import Counter

from orchestrator.core.envelope import Envelope
from providers.llm import LLMClient
from providers.primitives.answers import final_answer, vote_key
from providers.primitives.base import Params, PrimitiveInput, primitive
from providers.primitives.cot import cot_messages


@primitive("self_consistency", extract=final_answer)
def self_consistency(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    k = int(params.get("k", 5))
    if k < 1:
        return Envelope.failure("bad_request", f"self_consistency needs k >= 1, not {k}.")
    temperature = float(params.get("temperature", 0.7))
    samples = llm.complete_many(cot_messages(task), k, primitive="self_consistency", temperature=temperature)
    answers = [final_answer(sample.text) for sample in samples]
    votes = Counter(vote_key(answer) for answer in answers if answer)
    if not votes:
        return Envelope(status="ok", output=samples[0].text, answer=None, artifacts={"votes": {}, "k": k})
    winner, count = votes.most_common(1)[0]
    # Report the winning answer as the first sample wrote it, with that sample's reasoning.
    chosen = next(i for i, answer in enumerate(answers) if answer and vote_key(answer) == winner)
    return Envelope(
        status="ok",
        output=samples[chosen].text,
        answer=answers[chosen],
        artifacts={"votes": dict(votes), "k": k, "agreement": count / k},
    )
