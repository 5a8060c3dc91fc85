"""`mcptape tui`: the terminal face of the interactive client, a Textual app over one Interactive session.

Panes (F1–F7, or click the tabs): Tools, Resources, Templates, Prompts (a list on the
left, on the right the chosen item's form, a progress bar and the outcome), Logs (with
the level to ask for), Traffic (every frame of the session as the client sent and got
it), Server (who it is, the rules that answer its requests, the roots, the requests
waiting for you). The server's requests open a dialog. It fits 80×24; the footer says
what the keys do. Everything it does is recorded (mode ``client``) as ``call`` records.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar, Final

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import (
    Button,
    Footer,
    Label,
    ListItem,
    ListView,
    ProgressBar,
    RichLog,
    Select,
    Static,
    TabbedContent,
    TabPane,
    TextArea,
)
from textual.worker import Worker

from mcptape.client.interactive import Interactive, InteractiveError
from mcptape.client.schemaform import FormError, expand_template
from mcptape.terminal import safe
from mcptape.tui import render
from mcptape.tui.dialogs import QuestionScreen
from mcptape.tui.form import ArgumentsForm

KINDS: Final = ("tools", "resources", "templates", "prompts")
PANES: Final = (*KINDS, "logs", "traffic", "server")
TITLES: Final = {"tools": "Tools", "resources": "Resources", "templates": "Templates", "prompts": "Prompts",
                 "logs": "Logs", "traffic": "Traffic", "server": "Server"}  # fmt: skip
LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
SAMPLING_CHOICES: Final = (("ask me", ""), ("auto", "auto"), ("reject", "reject"))
ELICITATION_CHOICES: Final = (("ask me", ""), ("auto", "auto"), ("decline", "decline"), ("cancel", "cancel"))


class ItemPane(Horizontal):
    """A list and the chosen item's detail: its form, the progress of its operation, the outcome."""

    DEFAULT_CSS = """
    ItemPane > ListView { width: 26; border-right: solid $primary-darken-2; }
    ItemPane > VerticalScroll { padding: 0 1; }
    ItemPane .about { color: $text-muted; margin-bottom: 1; }
    ItemPane ProgressBar { display: none; }
    ItemPane ProgressBar.running { display: block; }
    ItemPane .outcome { margin-top: 1; }
    """

    def __init__(self, kind: str) -> None:
        super().__init__(id=f"pane-{kind}")
        self.kind = kind
        self.items: list[dict[str, Any]] = []
        self.forms: list[list[dict[str, Any]]] = []
        self.cursor: str | None = None
        self.chosen: int | None = None

    def compose(self) -> ComposeResult:
        yield ListView(id=f"list-{self.kind}")
        with VerticalScroll(id=f"detail-{self.kind}"):
            yield Static(Text("Loading…", style="dim"), classes="about")


class ClientApp(App[None]):
    """See the module docstring."""

    TITLE = "mcptape tui"
    CSS = """
    #status { height: 1; background: $primary-darken-3; color: $text; padding: 0 1; }
    TabbedContent { height: 1fr; }
    #server-info { height: auto; margin-bottom: 1; }
    #server-scroll { padding: 0 1; }
    #server-scroll Select { width: 18; }
    #server-scroll TextArea { height: 4; }
    #server-scroll Horizontal { height: auto; }
    #log-level { width: 24; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run", "Run"),
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+j", "raw", "JSON"),
        Binding("ctrl+n", "more", "More"),
        Binding("ctrl+o", "questions", "Asked", show=False),
        Binding("ctrl+q", "quit", "Quit"),
        Binding("f1", "pane('tools')", "F1-F7 panes"),
        *(
            Binding(f"f{i}", f"pane('{pane}')", TITLES[pane], show=False)
            for i, pane in enumerate(PANES[1:], 2)
        ),
    ]

    def __init__(self, interactive: Interactive) -> None:
        super().__init__()
        self.interactive = interactive
        interactive.emit = self._on_event
        self.ops = itertools.count(1)
        self.running: dict[str, str] = {}  # pane -> its operation in flight
        self.waiting: dict[str, dict[str, Any]] = {}  # questions not answered yet
        self.answers: list[dict[str, Any]] = []
        self.closing = False
        self.reloads: dict[str, Any] = {}
        self.loading: dict[str, asyncio.Lock] = {}  # kind -> the timer of its coming reload
        self.recording: str | None = None  # the session's id in the database, once it has a row
        self.stopped_by: int | None = None  # the signal that ended the app, if one did

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(
            Text(f"mcptape · {safe(self.interactive.target.description)} · connecting…"), id="status"
        )
        with TabbedContent(initial="tab-tools"):
            for kind in KINDS:
                with TabPane(TITLES[kind], id=f"tab-{kind}"):
                    yield ItemPane(kind)
            with TabPane("Logs", id="tab-logs"), Vertical():
                with Horizontal(classes="bar"):
                    yield Label("level ")
                    yield Select([(level, level) for level in LEVELS], prompt="(server's)", id="log-level")
                yield RichLog(id="logs", wrap=True, max_lines=2000)
            with TabPane("Traffic", id="tab-traffic"):
                yield RichLog(id="traffic", wrap=False, max_lines=1000)
            with TabPane("Server", id="tab-server"), VerticalScroll(id="server-scroll"):
                yield Label(
                    Text("Who answers the server's requests: rules first, then you (ctrl+o reopens one)")
                )
                with Horizontal():
                    yield Label("sampling ")
                    yield Select(SAMPLING_CHOICES, value="", allow_blank=False, id="rule-sampling")
                    yield Label(" elicitation ")
                    yield Select(ELICITATION_CHOICES, value="", allow_blank=False, id="rule-elicitation")
                yield Label("roots (one URI or URI=NAME a line)")
                yield TextArea("\n".join(r["uri"] for r in self.interactive.person.roots), id="roots")
                yield Button("Apply", id="apply")
                yield Static("", id="answered")
                yield Static(Text("…"), id="server-info")
        yield Footer()

    def on_mount(self) -> None:
        from mcptape.proxy.early_signals import STOP_SIGNALS

        # A signal (kill, the terminal closed) quits as ctrl+q does: without this, SIGTERM and
        # SIGHUP ended the app by their default action and SIGINT without closing the session,
        # the server left running and the session `running`.
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self._signalled, signum)
        self.run_worker(self._connect(), exclusive=False)

    def _signalled(self, signum: int) -> None:
        if self.stopped_by is not None:  # a second signal: not waiting for the server any more
            self.exit()
            return
        self.stopped_by = signum
        self.run_worker(self.action_quit(), exclusive=False)

    async def _connect(self) -> None:
        from mcptape.client.errors import ClientError

        try:
            info = await self.interactive.connect()
        except ClientError as exc:
            self._status(f"could not connect: {exc.message}", "bold red")
            return
        server = info.get("serverInfo") or {}
        text = Text.assemble((safe(f"{server.get('name', '?')} {server.get('version', '')}"), "bold"),
                             safe(f"  protocol {info['protocolVersion']} via {info['negotiatedWith']}\n"),
                             safe(f"capabilities: {', '.join(info.get('capabilities') or {}) or 'none'}\n"),
                             (safe(f"recorded in {info.get('recordedIn')} (mode client)\n"), "dim"),
                             safe(info.get("instructions") or ""))  # fmt: skip
        self.query_one("#server-info", Static).update(text)
        for kind in KINDS:
            self._work(self._loader(kind))

    def _status(self, text: str, style: str = "") -> None:
        self.query_one("#status", Static).update(Text(safe(text), style=style))

    # -- lists -------------------------------------------------------------------------------

    def _pane(self, kind: str) -> ItemPane:
        return self.query_one(f"#pane-{kind}", ItemPane)

    def _work(self, work: Callable[[], Coroutine[None, None, None]]) -> Worker[None]:
        return self.run_worker(work)

    def _loader(self, kind: str, more: bool = False) -> Callable[[], Coroutine[None, None, None]]:
        # Called when the worker starts: a worker cancelled first leaves no coroutine behind.
        async def load() -> None:
            await self._load(kind, more)

        return load

    async def _load(self, kind: str, more: bool = False) -> None:
        # One load of a list at a time: a reload while another runs would interleave their items.
        async with self.loading.setdefault(kind, asyncio.Lock()):
            await self._load_page(kind, more)

    async def _load_page(self, kind: str, more: bool) -> None:
        from mcptape.client.errors import ClientError

        pane = self._pane(kind)
        try:
            page = await self.interactive.list_page(kind, pane.cursor if more else None)
        except (ClientError, InteractiveError) as exc:
            await self._detail(kind, Static(Text(safe(str(exc)), style="red")))
            return
        if not more:
            pane.items, pane.forms, pane.chosen = [], [], None  # a reloaded list: choose again
            await pane.query_one(ListView).clear()
        pane.items += page["items"]
        pane.forms += page["forms"]
        pane.cursor = page["nextCursor"]
        listing = pane.query_one(ListView)
        for item in page["items"]:
            name = item.get("name") or item.get("uri") or item.get("uriTemplate") or "?"
            await listing.append(ListItem(Label(Text(safe(str(name)))), name=str(name)))
        tab = self.query_one(TabbedContent).get_tab(f"tab-{kind}")
        tab.label = Text(f"{TITLES[kind]} {len(pane.items)}{'+' if pane.cursor else ''}")
        if page.get("unsupported"):
            await self._detail(kind, Static(Text(f"The server offers no {kind}.", style="dim")))
        elif pane.chosen is None:
            await self._detail(
                kind, Static(Text("Choose one (↑↓), fill its form, ctrl+r runs it.", style="dim"))
            )

    @on(ListView.Highlighted)
    async def _chosen(self, event: ListView.Highlighted) -> None:
        kind = str(event.list_view.id).removeprefix("list-")
        pane = self._pane(kind)
        if event.item is None or event.list_view.index is None or kind not in KINDS:
            return
        index = event.list_view.index
        if index == pane.chosen or index >= len(pane.items):
            return
        pane.chosen = index
        item = pane.items[index]
        about = Text(safe(str(item.get("title") or item.get("name") or "")), style="bold")
        for key in ("uri", "uriTemplate", "mimeType", "description"):
            if isinstance(item.get(key), str):
                about.append("\n" + safe(item[key]), style="" if key == "description" else "dim")
        await self._detail(kind, Static(about, classes="about"), ArgumentsForm(pane.forms[index]),
                           ProgressBar(total=None, show_eta=False), Static("", classes="outcome"))  # fmt: skip

    async def _detail(self, kind: str, *widgets: Any) -> None:
        detail = self.query_one(f"#detail-{kind}", VerticalScroll)
        await detail.remove_children()
        await detail.mount_all(widgets)

    def _active(self) -> str:
        return str(self.query_one(TabbedContent).active).removeprefix("tab-")

    # -- operations ----------------------------------------------------------------------------

    def action_pane(self, pane: str) -> None:
        self.query_one(TabbedContent).active = f"tab-{pane}"

    def action_more(self) -> None:
        kind = self._active()
        if kind in KINDS and self._pane(kind).cursor:
            self._work(self._loader(kind, more=True))

    async def action_raw(self) -> None:
        kind = self._active()
        if kind in KINDS:
            for form in self.query_one(f"#detail-{kind}").query_children(ArgumentsForm):
                try:
                    await form.toggle_raw()
                except FormError as exc:
                    self.notify(safe(str(exc)), severity="error")

    def action_run(self) -> None:
        kind = self._active()
        if kind not in KINDS or self._pane(kind).chosen is None or kind in self.running:
            return
        pane = self._pane(kind)
        assert pane.chosen is not None
        item = pane.items[pane.chosen]
        try:
            values = self.query_one(f"#detail-{kind}").query_one(ArgumentsForm).values()
        except FormError as exc:
            self.notify(safe(str(exc)), severity="error")
            return
        calls: dict[str, tuple[str, dict[str, Any]]] = {
            "tools": ("tools/call", {"name": item.get("name"), "arguments": values}),
            "resources": ("resources/read", {"uri": item.get("uri")}),
            "templates": ("resources/read", {"uri": expand_template(str(item.get("uriTemplate")), values)}),
            "prompts": ("prompts/get", {"name": item.get("name"), "arguments": values}),
        }
        method, params = calls[kind]
        self.run_worker(self._operate(kind, method, params))

    async def _operate(self, kind: str, method: str, params: dict[str, Any]) -> None:
        op = f"op{next(self.ops)}"
        self.running[kind] = op
        detail = self.query_one(f"#detail-{kind}")
        bar = detail.query_one(ProgressBar)
        bar.update(total=None, progress=0)
        bar.add_class("running")
        bar.op = op  # type: ignore[attr-defined]
        detail.query_one(".outcome", Static).update(
            Text("waiting for the answer… (esc cancels)", style="dim")
        )
        try:
            outcome = await self.interactive.run(op, method, params)
        except InteractiveError as exc:
            outcome = {"status": "error", "method": method, "ms": 0, "error": {"category": "validation",
                                                                              "message": str(exc), "code": None}}  # fmt: skip
        finally:
            self.running.pop(kind, None)
        if outcome["status"] != "cancelled" and bar.total is None:
            bar.remove_class("running")
        detail.query_one(".outcome", Static).update(render.outcome(outcome))

    def action_cancel(self) -> None:
        op = self.running.get(self._active())
        if op is not None:
            self.interactive.cancel(op)

    # -- what the session says -------------------------------------------------------------------

    def _on_event(self, name: str, data: dict[str, Any]) -> None:
        if self.closing and name not in ("state",):
            return
        if name == "state":
            if not self.closing:
                style = {"connected": "bold", "error": "bold red"}.get(data["state"], "")
                self._status(
                    f"mcptape · {self.interactive.target.description} · {data['state']} {data['detail']}",
                    style,
                )
        elif name == "progress":
            self._progress(data)
        elif name == "log":
            self.query_one("#logs", RichLog).write(render.log_line(data))
        elif name == "traffic":
            self.query_one("#traffic", RichLog).write(render.traffic_line(data))
        elif name == "list_changed" and data["kind"] in KINDS:
            self._reload_soon(data["kind"])
        elif name == "question":
            self.waiting[data["id"]] = data
            self._ask(data)
        elif name == "answered":
            self.answers.append(data)
            shown = [f"{a['method']}: {a['by']}" for a in self.answers[-8:]]
            self.query_one("#answered", Static).update(
                Text(safe("answered: " + "; ".join(shown)), style="dim")
            )
        elif name == "recording":
            self.recording = data["sessionId"]
            self.notify(safe(f"recording as session {data['sessionId'][:12]}"), timeout=3)
        elif name in ("notice", "notification", "resource_updated"):
            self.notify(safe(str(data.get("text") or data)), timeout=4)

    def _reload_soon(self, kind: str) -> None:
        """Reload a list once a burst of list_changed is over (a server may send one per tool it adds)."""
        timer = self.reloads.pop(kind, None)
        if timer is not None:
            timer.stop()
        self.reloads[kind] = self.set_timer(0.15, lambda: self._work(self._loader(kind)))

    def _progress(self, data: dict[str, Any]) -> None:
        for bar in self.query(ProgressBar):
            if getattr(bar, "op", None) == data.get("op"):
                total = data.get("total")
                bar.update(
                    total=total if isinstance(total, int | float) else None,
                    progress=data.get("progress") or 0,
                )

    def _ask(self, question: dict[str, Any]) -> None:
        def send(body: dict[str, Any]) -> str | None:
            try:
                self.interactive.person.answer(question["id"], body)
            except InteractiveError as exc:
                return str(exc)
            self.waiting.pop(question["id"], None)
            return None

        self.push_screen(QuestionScreen(question, send))

    def action_questions(self) -> None:
        """Reopen what still waits for an answer."""
        for question in list(self.waiting.values()):
            if question["id"] in self.interactive.person.questions:
                self._ask(question)
            else:
                self.waiting.pop(question["id"], None)

    @on(Select.Changed, "#log-level")
    def _level(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL:
            self.run_worker(
                self.interactive.run(f"op{next(self.ops)}", "logging/setLevel", {"level": event.value})
            )

    @on(Button.Pressed, "#apply")
    async def _apply(self) -> None:
        sampling = self.query_one("#rule-sampling", Select).value
        elicitation = self.query_one("#rule-elicitation", Select).value
        try:
            self.interactive.person.set_rules(str(sampling or ""), str(elicitation or ""))
            roots = [
                line.strip() for line in self.query_one("#roots", TextArea).text.splitlines() if line.strip()
            ]
            await self.interactive.set_roots(roots)
        except InteractiveError as exc:
            self.notify(safe(str(exc)), severity="error")
            return
        self.notify("applied")

    async def action_quit(self) -> None:
        """Stop the server, write the recording, leave."""
        self.closing = True
        self._status("closing: stopping the server and writing the recording…")
        await self.interactive.close()
        self.exit()
