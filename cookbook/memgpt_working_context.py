"""MemGPT / Letta working context, offline: core blocks edited through tools, a message
queue that raises a memory-pressure notice at ~70 % of its budget and, at 100 %, folds its
oldest messages into a recursive summary, while every message stays searchable.

Run: python cookbook/memgpt_working_context.py   (no LLM, no network)
With `llm=` given to `ReflectiveMemory.open`, the recursive summary is written by the LLM.
The same five tools come as LangChain tools (`langchain_rmm.memory_tools`) and LlamaIndex
`FunctionTool`s (`llamaindex_rmm.memory_tools`) for an agent to call.
"""

from rmm_core import ReflectiveMemory, Turn
from rmm_core.agents.tools import MemoryTools

mem = ReflectiveMemory.open(":memory:")
# A tiny budget (in words) so that pressure and eviction show within a dozen messages.
tools = MemoryTools(mem, user_id="ada", session_id="chat", budget=150, unit="words")
wc = tools.working

print("-- the agent edits its core memory through tools")
print(tools.core_memory_append("human", "Name: Ada. Lives in Porto."))
print(tools.core_memory_append("persona", "I am a concise, friendly assistant."))
print(tools.core_memory_replace("human", "Lives in Porto.", "Lives in Lisbon (moved 2024)."))
print(tools.core_memory_append("pets", "a cat"))  # bad input -> an error string, not a crash

print("\n-- a conversation fills the message queue")
chat = [
    ("user", "Hi! I just moved to Lisbon last month, still unpacking boxes."),
    ("assistant", "Welcome to Lisbon! How is the new flat?"),
    ("user", "Small but bright. My cat Miso hides under the sofa all day."),
    ("assistant", "Cats need a week or two. Give Miso a quiet corner with her bed."),
    ("user", "I start my new job at the observatory on 3 March, night shifts."),
    ("assistant", "Exciting! Night shifts need a steady sleep routine."),
    ("user", "My sister Ines visits on 15 March; she is allergic to cats."),
    ("assistant", "Maybe air the flat and keep Miso in the bedroom that weekend."),
    ("user", "Good idea. I also want to learn Portuguese properly this year."),
    ("assistant", "A weekly class plus podcasts on the commute works well."),
    ("user", "Any podcast you would suggest for beginners?"),
    ("assistant", "Try a slow-news podcast; short episodes, clear speech."),
]
for speaker, text in chat:
    event = wc.add_message(Turn(speaker, text))
    line = f"{100 * event.usage:5.1f}% used  {speaker}: {text[:50]}"
    if event.notice:
        line += "\n        >> " + event.notice
    if event.evicted:
        line += f"\n        >> evicted {len(event.evicted)} oldest messages into the summary"
    print(line)

print("\n-- the working context as the LLM sees it")
print(wc.render())

print("\n-- evicted messages are still in recall storage")
print(tools.conversation_search("sister allergic cats"))

print("\n-- archival storage (the memory bank)")
print(tools.archival_memory_insert("Ada's sister Ines is allergic to cats."))
print(tools.archival_memory_search("who is allergic to cats?"))
