"""The inspector's routes: a small Starlette app over one `ReflectiveMemory`.

Pages are rendered on the server (Jinja2, autoescaped) and served with a Content Security
Policy that runs no script at all. Writes (feedback, update, delete) are POSTs refused
unless the app was built with `write=True`, each carrying the page's form token; deletes
and updates also need their confirmation box ticked. With a `token`, every request must
carry it (`Authorization: Bearer`, the cookie a `?token=` link sets). Requests for another
Host, and writes from another Origin, are refused (`guard.Guard`).
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import urlencode

from ..errors import FeedbackError, InvalidInputError, NotFoundError, RMMError
from ..hosts import LOOPBACK_NAMES, Hosts
from ..memory import ReflectiveMemory
from ..read.explain import DEFAULT_BUDGET, moves_text, score_text
from ..types import SearchResult, check_id
from . import plots, views
from .guard import Guard

LOOPBACK_HOSTS = LOOPBACK_NAMES
"""The default Host names accepted (any port): what `rmm ui` narrows to its bind and port."""
KEPT_RESULTS = 200
"""Search results kept for feedback (the oldest dropped first)."""


class Refused(RMMError):
    """A request the app will not serve (a write in read-only mode, a stale form)."""


def build_app(memory: ReflectiveMemory, *, write: bool = False, token: str | None = None,
              hosts: tuple[str, ...] = LOOPBACK_HOSTS) -> Any:
    """The ASGI app. `hosts`: the Host values accepted, `name` or `name:port` (DNS rebinding
    guard; `InvalidInputError` for a malformed one); `token`: required on every request."""
    from jinja2 import Environment, PackageLoader, select_autoescape
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    Hosts(hosts)  # a malformed one fails here, not at the first request
    env = Environment(loader=PackageLoader("rmm_core.ui", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.globals["link"] = lambda path, **params: path + ("?" + urlencode(
        {k: v for k, v in params.items() if v not in (None, "")}) if params else "")
    env.globals.update(moves_text=moves_text, score_text=score_text)  # as `--explain` says
    form_token = secrets.token_urlsafe(24)
    results: OrderedDict[str, SearchResult] = OrderedDict()
    """Results that can still take feedback (write mode), by id; pages run in threads."""
    lock = threading.Lock()

    def page(name: str, request: Request, status: int = 200, **context: Any) -> Response:
        html = env.get_template(name).render(write=write, form_token=form_token,
                                             path=request.url.path, **context)
        return HTMLResponse(html, status_code=status)

    def user_of(params: Any) -> str:
        user = check_id(params.get("u"), "user id")
        if not memory.store.has_user(user):
            raise NotFoundError(f"no user {user!r} in this store")
        return user

    async def posted(request: Request) -> Any:
        if not write:
            raise Refused("this inspector is read-only: start it with `rmm ui --write` to "
                          "change memories or give feedback")
        form = await request.form()
        if not secrets.compare_digest(str(form.get("form_token", "")), form_token):
            raise Refused("the form is stale or not from this page; reload it and try again")
        return form

    def users_page(request: Request) -> Response:
        query = request.query_params.get("q", "")
        found = views.users(memory, query, views.page_number(request.query_params.get("page")))
        return page("users.html", request, found=found, q=query)

    def user_page(request: Request) -> Response:
        params = request.query_params
        user = user_of(params)
        filters = views.Filters.of(params)
        shown = views.memory_page(memory, user, filters, views.page_number(params.get("page")))
        months = shown.by_month
        total, series = 0, []
        for n, (_, count) in enumerate(months):
            total += count
            series.append((n, total))
        step = max(1, len(months) // 8)
        chart = plots.line_chart({"memories": series}, title="memories over time",
                                 x_labels=[(n, m) for n, (m, _) in enumerate(months)
                                           if n % step == 0])
        return page("user.html", request, user=user, shown=shown, filters=filters,
                    filter_params=filters.params(), chart=chart)

    def memory_page(request: Request) -> Response:
        user = user_of(request.query_params)
        memory_id = check_id(request.query_params.get("id"), "memory id")
        detail = views.memory_detail(memory, user, memory_id)
        return page("memory.html", request, user=user, d=detail, m=detail.memory,
                    refs=set(detail.memory.refs))

    def search_page(request: Request) -> Response:
        params = request.query_params
        user = user_of(params)
        query = params.get("q", "")
        k = views.bounded(params.get("k"), "k", 5, 1, 50)
        budget = views.bounded(params.get("budget"), "budget", DEFAULT_BUDGET, 1, 100_000)
        context: dict[str, Any] = {"user": user, "q": query, "k": k, "budget": budget}
        if query.strip():
            result = memory.search(query, user_id=user, k=k, explain=True)
            explanation = result.explanation
            explanation.budget = budget
            if write and result.hits:
                with lock:
                    results[result.id] = result
                    while len(results) > KEPT_RESULTS:
                        results.popitem(last=False)
            parts, centring = views.breakdown(explanation.rows)
            context.update(result=result, e=explanation, cut=explanation.cut(),
                           centring=centring, chart=plots.stacked_bars(
                               parts, title="reranker score breakdown of the hits"))
        return page("search.html", request, **context)

    def learning_page(request: Request) -> Response:
        user = user_of(request.query_params)
        learned = views.learning(memory, user)
        charts = {}
        if learned is not None:
            charts["now"] = plots.bars(learned.current, title="reranker weights now")
            charts["history"] = plots.line_chart(
                {name: [(n, w[name]) for n, (_, w) in enumerate(learned.history)]
                 for name in learned.current}, title="reranker weights over logged steps")
        return page("learning.html", request, user=user, learned=learned, charts=charts)

    async def feedback(request: Request) -> Response:
        form = await posted(request)
        user = user_of(form)
        with lock:
            result = results.get(str(form.get("result", "")))
            if result is None or result.user_id != user:
                raise Refused("that search result is no longer kept; search again")
            results.pop(result.id)
        await run_in_threadpool(memory.feedback, result,
                                [str(c) for c in form.getlist("cited")])
        return RedirectResponse(env.globals["link"]("/learning", u=user, done="feedback"),
                                status_code=303)

    async def update(request: Request) -> Response:
        form = await posted(request)
        user = user_of(form)
        memory_id = check_id(form.get("id"), "memory id")
        if form.get("confirm") != "yes":
            raise Refused("tick the confirmation box to change this memory")
        await run_in_threadpool(memory.update, memory_id, str(form.get("text", "")),
                                user_id=user)
        return RedirectResponse(env.globals["link"]("/memory", u=user, id=memory_id),
                                status_code=303)

    async def delete(request: Request) -> Response:
        form = await posted(request)
        user = user_of(form)
        memory_id = check_id(form.get("id"), "memory id")
        if form.get("confirm") != "yes":
            raise Refused("tick the confirmation box to delete this memory")
        await run_in_threadpool(memory.delete, memory_id, user_id=user)
        return RedirectResponse(env.globals["link"]("/user", u=user, done="deleted"),
                                status_code=303)

    async def failed(request: Request, exc: Exception) -> Response:
        status = {NotFoundError: 404, Refused: 403}.get(type(exc), 400)
        return page("error.html", request, status=status, message=str(exc))

    routes = [Route("/", users_page), Route("/user", user_page), Route("/memory", memory_page),
              Route("/search", search_page), Route("/learning", learning_page),
              Route("/feedback", feedback, methods=["POST"]),
              Route("/update", update, methods=["POST"]),
              Route("/delete", delete, methods=["POST"])]
    handlers = {InvalidInputError: failed, NotFoundError: failed, Refused: failed,
                FeedbackError: failed}
    return Starlette(routes=routes, exception_handlers=handlers,
                     middleware=[Middleware(Guard, token=token, hosts=hosts)])
