"""SCM's self-controlled memory, offline: which inputs the gate lets through to long-term
memory, and what the context builder puts into the prompt (raw turns or a summary) and why.

Run: python cookbook/scm_controller.py   (no LLM, no network; uses the packaged MiniLM)
Pass `llm=` to `ReflectiveMemory.open` and the gate and the summary judgement become LLM
calls (YES/NO answers); everything else stays the same.
"""

from rmm_core import ReflectiveMemory, Turn
from rmm_core.read.scm import ContextBuilder, RuleGate, SCMController

mem = ReflectiveMemory.open(":memory:")
mem.add_session([
    Turn("Caroline", "I went to an LGBTQ support group yesterday and it was so powerful."),
    Turn("Melanie", "That's great! What happened there?"),
    Turn("Caroline", "People shared their transgender stories. It made me feel accepted and "
                     "gave me courage to keep going with my transition. I'm also thinking "
                     "about a career in counselling so I can help people like me, maybe "
                     "working with trans youth who have no one to talk to at home."),
    Turn("Melanie", "You'd be amazing at that. By the way, I painted a sunrise over the lake "
                    "last week, my first painting in years."),
], user_id="caroline", session_id="s1", started_at="2023-05-08T13:56:00")
mem.add_session([
    Turn("Caroline", "I'm saving up to adopt a child next year."),
    Turn("Melanie", "That's wonderful news. My kids loved the camping trip in June."),
], user_id="caroline", session_id="s2", started_at="2023-06-27T10:00:00")

# A small budget (in words here) so the builder has to choose.
controller = SCMController(RuleGate(threshold=0.35),
                           ContextBuilder(budget=90, long_raw=40, unit="words"))
previous = "Melanie: How have you been lately?"
inputs = [
    "thanks!",
    "What is the capital of Portugal?",
    "Do you remember what I told you about the support group?",
    "What career is Caroline considering?",
    "When is Caroline planning to adopt?",
]
for text in inputs:
    out = mem.recall(text, user_id="caroline", previous_turn=previous, controller=controller)
    verdict = "RECALL" if out.decision.use_memory else "SKIP  "
    print(f"\n{verdict} {text!r}: {out.decision.reason}")
    for item in out.context.items:
        print(f"   - memory {item.memory_id[:8]} -> {item.form:<8} {item.reason}")
    print(f"   context: {out.context.cost}/{out.context.budget} words "
          f"(previous turn always kept)")

print("\nThe context put into the prompt for the career question:\n")
print(mem.recall("What career is Caroline considering?", user_id="caroline",
                 previous_turn=previous, controller=controller).text)
