"""`RMMStore`, the LangGraph `BaseStore` over a real SQLite memory with the packaged embedder:
the key-value contract (checked against LangGraph's own `InMemoryStore`), search, scoping,
and `create_agent(store=...)` with `runtime.store` (the agent's chat model is the scripted
recording fake)."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import AIMessage
from langgraph.store.memory import InMemoryStore

from langchain_rmm import RMMMiddleware, RMMStore
from rmm_core.errors import InvalidInputError

NS = ("memories", "u1")
FACTS = {
    "dog": {"content": "My dog is a beagle called Biscuit.", "kind": "pet"},
    "city": {"content": "I live in Porto, near the river.", "kind": "place"},
    "job": {"content": "I work night shifts as a nurse.", "kind": "work"},
}


@pytest.fixture
def store(mem):
    return RMMStore(mem)


def fill(store) -> None:
    for key, value in FACTS.items():
        store.put(NS, key, value)


def view(item) -> tuple:
    return (item.namespace, item.key, item.value) if item is not None else None


def test_key_value_behaviour_matches_langgraphs_in_memory_store(store):
    reference = InMemoryStore()
    steps = [
        ("put", NS, "dog", FACTS["dog"]),
        ("put", NS, "city", FACTS["city"]),
        ("put", ("memories", "u2"), "dog", {"content": "I have no dog."}),
        ("put", NS, "dog", {"content": "My dog Biscuit is four now.", "kind": "pet"}),
        ("put", NS, "city", {"content": "I moved to Lisbon."}),  # drops a field
        ("delete", NS, "missing", None),
        ("delete", ("memories", "u2"), "dog", None),
    ]
    for op, ns, key, value in steps:
        for s in (store, reference):
            s.put(ns, key, value) if op == "put" else s.delete(ns, key)
        for probe_ns in (NS, ("memories", "u2")):
            for probe in ("dog", "city", "missing"):
                assert view(store.get(probe_ns, probe)) == view(reference.get(probe_ns, probe))
            listed = sorted(map(view, store.search(probe_ns, limit=10)))
            assert listed == sorted(map(view, reference.search(probe_ns, limit=10)))
    # InMemoryStore still lists the namespace its last item was deleted from
    assert store.list_namespaces() == [NS] == reference.list_namespaces()[:1]


def test_an_update_is_a_new_version_of_the_same_memory(store, mem):
    store.put(NS, "dog", FACTS["dog"])
    first = store.get(NS, "dog")
    store.put(NS, "dog", {"content": "My dog Biscuit is four now.", "kind": "pet"})
    (memory,) = mem.memories(user_id="u1")
    assert [v.text for v in mem.history(memory.id, user_id="u1")] == [
        FACTS["dog"]["content"], "My dog Biscuit is four now."]
    second = store.get(NS, "dog")
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at


def test_search_is_the_memorys_search_with_metadata_filters(store):
    fill(store)
    top = store.search(("memories", "u1"), query="What is my dog called?", limit=2)
    assert top[0].key == "dog"
    assert top[0].score is not None
    assert len(top) == 2
    only = store.search(("memories", "u1"), query="where do I live", filter={"kind": "work"})
    assert [i.key for i in only] == ["job"]
    eq = store.search(("memories", "u1"), query="dog", filter={"kind": {"$eq": "place"}})
    assert [i.key for i in eq] == ["city"]
    assert store.search(("memories", "u2"), query="What is my dog called?") == []
    paged = store.search(("memories", "u1"), limit=1, offset=1)
    assert [i.key for i in paged] == ["city"]  # newest first: job, city, dog


@pytest.mark.parametrize("call", [
    lambda s: s.search(("memories",), query="dog"),           # no user named
    lambda s: s.get(("notes", "u1"), "dog"),                  # another layout
    lambda s: s.put(("memories", " "), "dog", FACTS["dog"]),  # blank user id
    lambda s: s.put(NS, "dog", {"content": "x", "store_key": "y"}),
    lambda s: s.search(NS, query="dog", filter={"kind": {"$ne": "pet"}}),
], ids=["prefix-without-user", "other-layout", "blank-user", "reserved-field", "operator"])
def test_bad_calls_are_typed_errors_that_change_nothing(store, mem, call):
    with pytest.raises(InvalidInputError):
        call(store)
    assert mem.store.users() == []


def test_agent_and_run_scopes_in_the_namespace(mem):
    store = RMMStore(mem, namespace=("memories", "{user_id}", "{agent_id}"))
    store.put(("memories", "u1", "chef"), "a", {"content": "Likes spicy food."})
    store.put(("memories", "u1", "coach"), "a", {"content": "Runs 50 km a week."})
    assert store.get(("memories", "u1", "chef"), "a").value == {"content": "Likes spicy food."}
    both = store.search(("memories", "u1"), query="food")
    assert sorted(i.namespace for i in both) == [("memories", "u1", "chef"),
                                                 ("memories", "u1", "coach")]
    assert store.list_namespaces(prefix=("memories", "u1"), max_depth=2) == [("memories", "u1")]
    assert mem.memories(user_id="u1")[0].metadata["agent_id"] in {"chef", "coach"}


async def test_async_calls(store):
    await store.aput(NS, "dog", FACTS["dog"])
    assert (await store.aget(NS, "dog")).value == FACTS["dog"]
    assert [i.key for i in await store.asearch(NS, query="beagle")] == ["dog"]
    await store.adelete(NS, "dog")
    assert await store.aget(NS, "dog") is None


def test_create_agent_tools_use_runtime_store_and_see_what_the_middleware_learned(
        mem, chat_model):
    @tool
    def remember(fact: str, runtime: ToolRuntime) -> str:
        """Save a fact about the user."""
        user = runtime.context["user_id"]
        runtime.store.put(("memories", user), "fact-1", {"content": fact})
        return "saved"

    @tool
    def recall(query: str, runtime: ToolRuntime) -> str:
        """Look facts about the user up."""
        items = runtime.store.search(("memories", runtime.context["user_id"]), query=query)
        return " | ".join(i.value["content"] for i in items)

    def calls(name: str, **args) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": name,
                                                  "type": "tool_call"}])

    model = chat_model(calls("remember", fact="I am allergic to peanuts."), "Saved.",
                       calls("recall", query="allergies"), "Peanuts.")
    store = RMMStore(mem)
    agent = create_agent(model, tools=[remember, recall], store=store,
                         middleware=[RMMMiddleware(mem)])
    agent.invoke({"messages": [("user", "Please remember my allergy.")]},
                 context={"user_id": "u1"})
    out = agent.invoke({"messages": [("user", "What am I allergic to?")]},
                       context={"user_id": "u1"})
    tool_output = next(m for m in out["messages"] if m.type == "tool")
    assert "peanuts" in tool_output.text
    # the run without a thread was reflected by the middleware: its memory is an item too
    learned = [i for i in store.search(NS, limit=20) if i.key != "fact-1"]
    assert any("allergy" in i.value["content"] for i in learned)
    assert store.get(NS, learned[0].key).value == learned[0].value


@pytest.mark.parametrize("query", [
    {}, {"prefix": ("memories", "u1")}, {"suffix": ("coach",)}, {"prefix": ("memories", "*")},
    {"suffix": ("*", "chef")}, {"max_depth": 2}, {"limit": 2, "offset": 1},
    {"prefix": ("notes",)},
], ids=str)
def test_list_namespaces_matches_langgraphs_in_memory_store(mem, query):
    store = RMMStore(mem, namespace=("memories", "{user_id}", "{agent_id}"))
    reference = InMemoryStore()
    for user, agent in [("u1", "chef"), ("u1", "coach"), ("u2", "chef"), ("u3", "coach")]:
        for s in (store, reference):
            s.put(("memories", user, agent), "k", {"content": f"{user} talks to {agent}"})
    assert store.list_namespaces(**query) == reference.list_namespaces(**query)
