"""A-MEM linked notes, offline: every memory gets keywords, tags and a one-line context,
related memories link to each other, and search can follow the links.

Run: python cookbook/amem_notes.py   (no LLM needed; pass `llm=` to `open` for LLM notes,
links and note evolution)
"""

from rmm_core import ReflectiveMemory

SESSIONS = [
    [{"speaker": "Ann", "text": "I adopted a beagle puppy named Rex from the shelter."},
     {"speaker": "Bob", "text": "Lovely! How old is Rex?"}],
    [{"speaker": "Ann", "text": "My job interview at the bank went well."},
     {"speaker": "Bob", "text": "When will the bank call you back?"}],
    [{"speaker": "Ann", "text": "Rex the beagle chewed my new running shoes."},
     {"speaker": "Bob", "text": "Beagle puppies chew everything; get Rex chew toys."}],
]

mem = ReflectiveMemory.open(":memory:", notes={"enabled": True, "link_threshold": 0.3})
for session in SESSIONS:
    mem.add_session(session, user_id="ann")

for memory in mem.memories(user_id="ann"):
    print(f"- {memory.text.splitlines()[0][:60]}")
    print(f"    keywords={memory.attrs['keywords']} tags={memory.attrs['tags']}")
    print(f"    context={memory.attrs['context']!r} links={len(memory.attrs['links'])}")

query = "What happened to Ann's running shoes?"  # the linked note says who Rex is
for follow in (False, True):
    print(f"\nsearch {query!r}, follow_links={follow}:")
    for hit in mem.search(query, user_id="ann", k=2, follow_links=follow):
        print(f"  {hit.rank}. {hit.text.splitlines()[0][:70]}")
mem.close()
