"""Agent Workflow Memory, offline: induce reusable workflows from successful agent runs,
deduplicate them, and retrieve the relevant ones as a system-prompt block for a new task.

Run: python cookbook/agent_workflow_memory.py   (LLM-free induction; give `llm=` to `open`
for the LLM induction prompt and an LLM success judge). For agents, see
`langchain_rmm.WorkflowMiddleware` and `llamaindex_rmm.WorkflowAgentHook`.
"""

from rmm_core import ReflectiveMemory
from rmm_core.agents.workflows import Step, Trajectory

runs = [
    Trajectory("Book a flight from Paris to Berlin on 12 May", [
        Step("home page", "",
             "search_flights(origin='Paris', destination='Berlin', date='12 May')"),
        Step("3 results", "the cheapest fits", "select_flight(id=4411)"),
        Step("payment form", "", "pay(card='visa')")], outcome="Booked flight 4411."),
    Trajectory("Book a flight from Rome to Oslo on 3 June", [
        Step("", "", "search_flights(origin='Rome', destination='Oslo', date='3 June')"),
        Step("", "", "select_flight(id=1270)"),
        Step("", "", "pay(card='visa')")], outcome="Booked flight 1270."),
    Trajectory("Find the weather in Tokyo", [Step("", "", "get_weather(city='Tokyo')")],
               outcome="error: the weather service is unavailable"),
]

mem = ReflectiveMemory.open(":memory:")
# offline mode: a batch of past runs (the failed one is judged unsuccessful and skipped)
mem.workflows.induce(runs, agent_id="travel-bot")
for flow in mem.workflows.workflows(agent_id="travel-bot"):
    print(f"{flow.render()}\n  (induced from {flow.support} runs)\n")

# online mode: record each finished run; it is induced and added when judged successful
mem.workflows.record({"task": "Reserve a hotel in Lisbon for 2 nights",
                      "steps": [{"action": "search_hotels(city='Lisbon', nights=2)"},
                                {"action": "book_hotel(id=88)"}],
                      "outcome": "Hotel booked."}, agent_id="travel-bot")

print(mem.workflows.prompt("Book a flight from Madrid to Lisbon", agent_id="travel-bot"))
mem.close()
