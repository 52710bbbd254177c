"""`%mentra` and `%%mentra`: the notebook's way to spawn, talk to and resume agents."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from traitlets import Dict, TraitError, Unicode, observe, validate

from mentra_nb._collector import collector_paused
from mentra_nb._lazy import lazy_import
from mentra_nb.errors import AgentNotFound, AwaitingApproval, ConfigError, MentraError
from mentra_nb.notebook._display import display
from mentra_nb.notebook._hidden_characters import hidden_characters, mark_hidden

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mentra_nb import pricing, runtime
    from mentra_nb.messages import ContentBlock, Usage
    from mentra_nb.notebook import _aliases as aliasing
    from mentra_nb.notebook import _arguments as args
    from mentra_nb.notebook import _figures as figures
    from mentra_nb.notebook import _notebook_context as context
    from mentra_nb.notebook import _output_model as typed
    from mentra_nb.notebook import turn as turns
    from mentra_nb.notebook._session import NotebookSession
    from mentra_nb.notebook.turn import Reply, Turn
    from mentra_nb.runtime import Agent
else:
    # `%load_ext` registers these magics; the parser (pydantic), the runtime and the
    # price table load with the first `%mentra` command, so loading stays cheap.
    args = lazy_import("mentra_nb.notebook._arguments")
    aliasing = lazy_import("mentra_nb.notebook._aliases")
    context = lazy_import("mentra_nb.notebook._notebook_context")
    figures = lazy_import("mentra_nb.notebook._figures")
    typed = lazy_import("mentra_nb.notebook._output_model")
    turns = lazy_import("mentra_nb.notebook.turn")
    runtime = lazy_import("mentra_nb.runtime")
    pricing = lazy_import("mentra_nb.pricing")

__all__ = ["MentraMagics"]


def _tokens(usage: Usage) -> str:
    cached = f", {usage.cache_read_tokens:,} read from cache" if usage.cache_read_tokens else ""
    return f"{usage.total_tokens:,} tokens{cached}"


@magics_class
class MentraMagics(Magics):
    """Magics for mentra-nb agents. `%mentra help` lists them."""

    default_model = Unicode(
        "",
        help="Model for `%mentra spawn` without --model, as 'provider:model'. "
        "Empty: the offline `test` model.",
    ).tag(config=True)

    prices = Dict(
        help="Prices in USD per million tokens by model, added to the built-in table: "
        "{'provider:model' or 'provider:*': {'input': .., 'output': .., 'cache_read': .., "
        "'cache_write': ..}}.",
    ).tag(config=True)

    @observe("prices")
    def _prices_changed(self, change: dict[str, Any]) -> None:
        # A key dropped from the dict goes back to the built-in price (or none).
        old = change["old"] if isinstance(change["old"], dict) else {}  # unset at first
        new = change["new"] if isinstance(change["new"], dict) else {}
        for model in set(old) - set(new):
            pricing.unregister(model)
        for model, price in new.items():
            try:
                pricing.register(model, price)
            except MentraError as err:
                raise UsageError(f"MentraMagics.prices: {err}") from None

    aliases = Dict(
        value_trait=Unicode(),
        help="Model aliases: {'NAME': 'provider:model'}; NAME then works wherever a model is "
        "asked for (--model, default_model). `%mentra alias NAME PROVIDER:MODEL` adds one.",
    ).tag(config=True)

    @validate("aliases")
    def _check_aliases(self, proposal: dict[str, Any]) -> dict[str, str]:
        # Before the value is set, so a bad alias leaves the ones before it in place.
        providers = self._providers()
        aliases: dict[str, str] = proposal["value"] or {}
        for name, target in aliases.items():
            try:
                aliasing.check_alias(name, target, providers)
            except aliasing.AliasError as err:
                # A TraitError, so %config's update rolls back to the aliases before it.
                raise TraitError(f"MentraMagics.aliases: {err}") from None
        return {name: target.strip() for name, target in aliases.items()}

    def __init__(self, shell: Any, session: Callable[[], NotebookSession]) -> None:
        super().__init__(shell)
        self._session = session

    @property
    def session(self) -> NotebookSession:
        """The kernel's session, opened by the first command that needs it."""
        return self._session()

    # no_var_expand: IPython would replace `$NAME` in the line with a kernel variable
    # of that name; `$NAME` here names an environment variable (an MCP header or env
    # value that must not be stored), and prompts take kernel variables as {name}.
    @no_var_expand
    @line_cell_magic
    def mentra(self, line: str, cell: str | None = None) -> Any:
        try:
            if cell is not None:
                return self._cell(args.parse_cell(line), cell)
            command = args.parse_line(line)
        except args.ParseError as err:
            raise UsageError(str(err)) from None
        handler = getattr(self, f"_do_{command.command.replace(' ', '_')}")
        return handler(command)

    # --- commands -----------------------------------------------------------------

    def _do_spawn(self, command: args.SpawnArgs) -> Agent:
        session = self.session
        command = command.model_copy(update={"model": self._model(command.model)})
        # Everything that would fail later fails here, before anything is stored.
        if command.model:
            session.check_credentials(command.model)
        if command.tools:
            session.check_tools(command.tools)
        servers = command.mcp or []
        session.check_mcp_servers(servers)
        model, note = session.spawn_model(command.agent, command.model, self._model(self.default_model) or "")
        enabled = [name for name, on in (("python", command.python), ("shell", command.shell)) if on]
        for name in enabled:
            session.enable_tool(name)
        hidden = [] if command.tools is not None else session.tools_hidden_from(model, enabled)
        try:
            config = runtime.AgentConfig(system=command.system, tools=command.tools, hidden_tools=hidden,
                                         subagents=command.subagents, team=command.team,
                                         read_only=command.read_only, auto_approve=command.auto_approve or [],
                                         mcp_servers=servers, max_cost_usd=command.max_cost,
                                         max_tokens_total=command.max_tokens, cells=command.cells_setting)
        except ConfigError as err:
            raise UsageError(f"{err}\nusage: {args.SpawnArgs.usage()}") from None
        agent, attached = session.spawn_or_attach(command.agent, model, config,
                                                  model_given=command.model is not None,
                                                  replace=command.replace)
        if note and agent.snapshot.history_len == 0:  # the fallback matters to a new agent only
            print(f"mentra: {note}")
        if attached:
            print(f"mentra: {attached}")
        cells = session.cells_notice(agent)
        if cells:
            print(f"mentra: {cells}")
        return agent

    def _do_map(self, command: args.MapArgs) -> runtime.BatchJob:
        rows = self._kernel_rows(command.rows, args.MapArgs.usage())
        output = self._output_model(command.output)
        agent = self.session.agent(command.agent)
        try:
            # On the runtime's thread: the job starts there and runs while cells go on.
            job: runtime.BatchJob = self.session.call(lambda: runtime.batch.map_rows(
                agent, rows, command.prompt, output=output, concurrency=command.concurrency,
                max_cost_usd=command.max_cost, name=command.name, replace=command.replace))
        except ConfigError as err:
            raise UsageError(f"{err}\nusage: {args.MapArgs.usage()}") from None
        self._results_into(command.into, job)
        display(self.session.batch_view(job))
        return job

    def _do_compare(self, command: args.CompareArgs) -> runtime.batch.Comparison:
        rows = self._kernel_rows(command.rows, args.CompareArgs.usage())
        output = self._output_model(command.output)
        agents = [self.session.agent(name) for name in command.agents]
        judge = self.session.agent(command.judge) if command.judge is not None else None
        session = self.session
        try:
            # On the runtime's thread: the jobs start there and run while cells go on.
            found: runtime.batch.Comparison = session.call(lambda: runtime.batch.compare_rows(
                session.runtime, rows, agents, command.prompt, output=output, judge=judge,
                concurrency=command.concurrency, max_cost_usd=command.max_cost, name=command.name,
                replace=command.replace))
        except ConfigError as err:
            raise UsageError(f"{err}\nusage: {args.CompareArgs.usage()}") from None
        self._results_into(command.into, found)
        for name in found.agents:
            display(session.batch_view(found.jobs[name]))
        return found

    def _kernel_rows(self, name: str, usage: str) -> Any:
        shell = self.shell
        assert shell is not None  # a magic runs in a shell
        if name not in shell.user_ns:
            raise UsageError(f"no kernel variable '{name}': give the name of a DataFrame or a list "
                             f"of dicts\nusage: {usage}")
        return shell.user_ns[name]

    def _results_into(self, into: str | None,
                      work: runtime.BatchJob | runtime.batch.Comparison) -> None:
        """`--into VAR`: `work.results()` goes into VAR each time it stops (now, if it has)."""
        if into is None:
            return
        shell = self.shell
        assert shell is not None
        user_ns = shell.user_ns

        def publish(stopped: Any) -> None:
            user_ns[into] = stopped.results()

        work.on_stop(publish)
        if work.state != "running":  # attached to one that already stopped
            user_ns[into] = work.results()

    def _do_approve(self, command: args.ApproveArgs) -> None:
        self.session.approve(self.session.agent(command.agent), command.call_id, always=command.always)

    def _do_deny(self, command: args.DenyArgs) -> None:
        self.session.deny(self.session.agent(command.agent), command.call_id, command.reason)

    def _do_send(self, command: args.SendArgs) -> Turn | Reply | BaseModel | None:
        # Filled here, from this kernel's cells and variables, wherever the message goes.
        text = command.text if command.no_interpolate else self._interpolate(command.text)
        try:
            agent = self.session.agent(command.agent)
        except AgentNotFound:
            if command.output is not None:
                raise  # a typed answer comes back to this kernel only: no mail
            # Driven by another kernel (maybe on another host): leave it mail there.
            owner = self.session.post(command.agent, text)
            if owner is None:
                raise
            print(f"mentra: '{command.agent}' is driven by another kernel ({owner}); the message "
                  "was left as mail and runs there")
            return None
        return self._send(agent, text, wait=command.wait, output=self._output_model(command.output))

    def _cell(self, command: args.CellArgs, body: str) -> Turn | Reply | BaseModel:
        prompt = body.strip()
        if not prompt:
            raise UsageError(f"the cell is empty: write the prompt below the magic line\n"
                             f"usage: {args.CellArgs.usage('%%mentra')}")
        if command.format == "code" and command.output is not None:
            raise UsageError("-f code puts a code block of the answer in the next cell, --output makes the "
                             f"answer a {command.output}: use one of them\nusage: {args.CellArgs.usage('%%mentra')}")
        if not command.no_interpolate:
            prompt = self._interpolate(prompt)
        output = self._output_model(command.output)
        agent = self.session.agent(command.agent)
        content: str | list[ContentBlock] = prompt
        if command.figure:
            from mentra_nb.messages import TextBlock

            content = [TextBlock(text=prompt), *self._current_figure()]
        if command.format == "code":
            # The next cell can be set only while this cell runs: wait for the answer.
            reply = self._send(agent, content, wait=True, unanswered=", so no code went into the next cell")
            if isinstance(reply, turns.Reply):
                self._code_into_next_cell(reply)
            return reply
        return self._send(agent, content, wait=command.wait, output=output)

    def _send(self, agent: Agent, text: str | list[ContentBlock], *, wait: bool,
              output: type[BaseModel] | None = None, unanswered: str = "") -> Turn | Reply | BaseModel:
        """A Turn; with `wait`, the Reply, or a typed turn's validated instance (the Turn,
        said so with `unanswered` added, when the wait stopped at a call waiting for
        approval that nothing could answer meanwhile)."""
        # The cell shows its own turn, live; when the turn ends that output becomes
        # the turn's static transcript (what a saved notebook keeps).
        turn, view = self.session.start_turn(agent, text, output=output)
        view.show()
        if wait:
            try:
                # A typed turn's answer is the validated instance itself.
                if output is not None:
                    answer: BaseModel = turn.output
                    return answer
                return turns.Reply.of(turn.result(), turn)
            except AwaitingApproval as asked:
                print(f"mentra: {asked}{unanswered}")
        return turn

    def _do_explain(self, command: args.ExplainArgs) -> Turn | Reply | BaseModel:
        cells = self.session.cells
        failure = cells.last_error if cells is not None else None
        if cells is None or failure is None:
            raise UsageError("no cell has raised an exception since %load_ext mentra_nb; run the failing "
                             "cell again, then %mentra explain")
        name = command.agent or self.session.last_agent
        if name is None:
            live = [a.name for a in self.session.runtime.agents if a.kind != "teammate"]
            if len(live) != 1:
                raise UsageError("say which agent explains it: %mentra explain NAME (no cell has sent "
                                 "an agent work yet" + (f"; live agents: {', '.join(live)})" if live else ")"))
            name = live[0]
        agent = self.session.agent(name)
        print(f"mentra: '{agent.name}' explains the {failure.name} of In [{failure.execution_count}]")
        return self._send(agent, context.explain_prompt(failure), wait=command.wait)

    def _current_figure(self) -> list[ContentBlock]:
        try:
            shown = figures.find_figures(None, self.session.cells, self.session.user_ns)
        except figures.FigureNotFound as err:
            raise UsageError(f"--figure: {err}") from None
        print(f"mentra: attached {shown.description}")
        return list(shown.images)

    def _code_into_next_cell(self, reply: Reply) -> None:
        code = context.first_code_block(reply.text)
        if code is None:
            print("mentra: the answer has no code block, so no cell was added (-f code takes the first "
                  "``` block of the answer)")
            return
        hidden = hidden_characters(code)
        if hidden:
            # Bidi controls and zero-width characters would make the cell run other
            # than it reads: each is replaced by a visible marker the user must resolve.
            print(f"mentra: the code block holds hidden characters ({', '.join(hidden)}), each shown as "
                  "<U+XXXX> in the new cell: read the code before you run it")
            code = mark_hidden(code)
        shell = self.shell
        assert shell is not None  # a magic runs in a shell
        # IPython's set_next_input payload: the front end puts it in a new cell below.
        shell.set_next_input(code, replace=False)

    def _do_list(self, _command: args.ListAgentsArgs) -> None:
        records = self.session.records()
        runtime = self.session.runtime
        live = {a.id for a in runtime.agents}
        # Read on the runtime's thread, where approvals come and go.
        waiting = self.session.host.call(
            lambda: {a.id: a.snapshot.pending_approvals for a in runtime.agents})
        print(f"agents of '{self.session.location.runtime_id}' in {self.session.location.where}:")
        if not records:
            print("  none yet: %mentra spawn NAME")
            return
        width = max(len(r.name) for r in records)
        names = {r.id: r.name for r in records}
        for r in records:
            kind = "" if r.kind == "agent" else f" ({r.kind})"
            if r.forked_from is not None:
                kind += f" (fork of {names.get(r.forked_from, 'a deleted agent')} at {r.fork_index})"
            where = "live" if r.id in live else "stored"
            print(f"  {r.name:<{width}}  {where:<6}  {r.model:<24}  {r.status!s:<16}  "
                  f"{r.run_generation:>3} turns  {r.message_count:>4} messages  "
                  f"{r.usage.input_tokens}/{r.usage.output_tokens} tokens  "
                  f"{pricing.format_cost(r.usage.cost_usd)}{kind}")
            # A teammate or subagent without a view of its own must not wait unseen.
            for call in waiting.get(r.id, []):
                print(f"  {'':<{width}}  waiting for approval: {call.tool_name}  "
                      f"(%mentra approve {r.name} {call.reference}, or %mentra deny)")

    def _do_cost(self, command: args.CostArgs) -> None:
        records = self.session.records()
        if command.agent is not None:
            wanted = [r for r in records if r.name == command.agent and r.kind == "agent"]
            if not wanted:
                raise UsageError(f"no stored agent named '{command.agent}'; %mentra list shows them")
        else:
            wanted = [r for r in records if r.kind == "agent"]
        if not wanted:
            print("  none yet: %mentra spawn NAME")
            return
        total = None
        for r in wanted:
            spent = runtime.spending_from_records(records, r.id)
            print(f"{r.name} ({r.model}): {pricing.format_cost(spent.total.cost_usd)}, "
                  f"{_tokens(spent.total)}")
            if spent.members:  # a lead or a delegating agent: say where the money went
                for label, usage in (("own calls", spent.agent), ("team", spent.team),
                                     ("subagents", spent.subagents)):
                    print(f"  {label:<10} {pricing.format_cost(usage.cost_usd):>14}  {_tokens(usage)}")
            total = spent.total if total is None else total + spent.total
        if command.agent is None and total is not None and len(wanted) > 1:
            print(f"all agents: {pricing.format_cost(total.cost_usd)}, {total.total_tokens:,} tokens")
        if total is not None and total.misreported_calls:
            print(f"(cost unknown: the server reported impossible usage for {total.misreported_calls} "
                  "model call(s), counted as 0 or the cap; an agent with a budget stops)")
        elif total is not None and total.cost_usd is None:
            print("(cost unknown: a model has no price; mentra_nb.pricing.register(...) or "
                  "%config MentraMagics.prices adds one)")

    def _do_resume(self, command: args.ResumeArgs) -> None:
        # What resuming makes lives on (the modules the first command imports, the
        # agents, their views): the collector would walk it over and over, a full
        # collection among the walks (mentra_nb/_collector.py).
        with collector_paused():
            self._resume(command)

    def _resume(self, command: args.ResumeArgs) -> None:
        if command.agent and command.all:
            raise UsageError(f"give NAME or --all, not both\nusage: {args.ResumeArgs.usage()}")
        # Opt-in tools are not remembered across kernels: the user enables them again.
        for name, on in (("python", command.python), ("shell", command.shell)):
            if on:
                self.session.enable_tool(name)
        agents = self.session.resume(command.agent)
        if not agents:
            location = self.session.location
            print(f"mentra: nothing to resume in {location.where} (runtime id '{location.runtime_id}')")
            elsewhere = self.session.stored_elsewhere()
            if elsewhere:
                print("mentra: " + elsewhere)
        for agent in agents:
            note = ""
            if agent.status.name == "interrupted":
                if agent.resumable_turn is not None:
                    note = " (its last turn was cut by the restart: agent.resume() replays it)"
                else:
                    note = " (a tool call was cut by the restart: agent.resume() continues the turn)"
            print(f"mentra: resumed '{agent.name}', {agent.snapshot.history_len} messages, "
                  f"{agent.status}{note}")
            last = agent.last_message
            if last is not None and any(r.content == runtime.APPROVAL_INTERRUPTED_RESULT for r in last.tool_results):
                print(f"mentra: '{agent.name}' was waiting for your approval when the kernel stopped; that "
                      "call was not run (agent.resume() lets it ask again)")
            mcp_names = runtime.MCPConfig.of(agent.config).mcp_servers
            if mcp_names:
                configured = {s.name: s for s in self.session.mcp_servers()}
                missing = [n for n in mcp_names if n not in configured]
                print(f"mentra: '{agent.name}' uses MCP servers {', '.join(mcp_names)} "
                      "(started on first use)" + (
                          f"; not configured here: {', '.join(missing)} (add with %mentra mcp add; "
                          "an in-process server is not stored)" if missing else ""))
                for server in (configured[n] for n in mcp_names if n in configured):
                    if server.needs_approval:
                        # A state file can come from anyone: say what it would run.
                        print(f"mentra: MCP server '{server.name}' came from the state file, not from this "
                              f"kernel, and runs: {server.target}\n  '{agent.name}' asks your approval "
                              f"before it first starts it (%mentra mcp remove {server.name} drops it)")
            display(self.session.view(agent))

    def _do_interrupt(self, command: args.InterruptArgs) -> None:
        self.session.interrupt(self.session.agent(command.agent))

    def _do_stop(self, command: args.StopArgs) -> None:
        self.session.stop(self.session.agent(command.agent), now=command.now)

    def _do_show(self, command: args.ShowArgs) -> None:
        display(self.session.view(self.session.agent(command.agent)))

    def _do_team(self, command: args.TeamArgs) -> None:
        display(self.session.team_view(self.session.agent(command.lead)))

    def _do_teammate(self, command: args.TeammateArgs) -> None:
        lead = self.session.agent(command.lead)
        mates = self.session.call(lambda: runtime.teams.teammates(lead))
        present = next((m for m in mates if m.name == command.agent and m.status.name != "shutdown"), None)
        if present is not None and present.role == command.role:
            # A rerun of the cell: the teammate is there, and its first mail went out before.
            print(f"mentra: '{present.name}' is on {lead.name}'s team already ({present.role}, "
                  f"{present.status.name}); nothing was sent again")
            display(self.session.team_view(lead))
            return
        spawn = runtime.teams.spawn_teammate(lead, command.agent, command.role, command.prompt,
                                             model=self._model(command.model))
        teammate = self.session.host.submit(spawn).result(60)
        print(f"mentra: '{teammate.name}' joined {lead.name}'s team as {command.role}")
        display(self.session.team_view(lead))

    def _do_subagents(self, command: args.SubagentsArgs) -> None:
        display(self.session.picker(self.session.agent(command.agent)))

    # --- time travel ----------------------------------------------------------------

    def _do_fork(self, command: args.ForkArgs) -> Agent:
        source = self.session.agent(command.agent)
        fork, note = self.session.fork(source, command.new, command.at, replace=command.replace)
        at = fork.fork_index
        print(f"mentra: '{fork.name}' is a fork of '{source.name}' at message {at} "
              f"({at} of its messages, shared, not copied)" + (f"; {note}" if note else ""))
        return fork

    def _do_rewind(self, command: args.RewindArgs) -> None:
        agent = self.session.agent(command.agent)
        if command.with_cells:
            self._undo(agent, command.to)
            return
        before = agent.snapshot.history_len
        self.session.call(lambda: agent.rewind(command.to))
        print(_rewound(agent.name, before, command.to))
        pending = self.session.cell_changes_after(agent, command.to)
        if pending:
            print(f"mentra: the {pending} cell change(s) it made after message {command.to} stay in the "
                  f"notebook; %mentra undo {agent.name} --to {command.to} reverts them")

    def _do_undo(self, command: args.UndoArgs) -> None:
        self._undo(self.session.agent(command.agent), command.to)

    def _undo(self, agent: Agent, to: int | None) -> None:
        before = agent.snapshot.history_len
        to, cells = self.session.undo(agent, to)
        print(_rewound(agent.name, before, to))
        print(f"mentra: cells: {cells.summary()}")

    def _do_history(self, command: args.HistoryArgs) -> None:
        agent = self.session.agent(command.agent)
        checkpoints = self.session.call(agent.checkpoints)
        branches = self.session.call(agent.branches)
        fork = ""
        if agent.forked_from is not None:
            parent = next((r.name for r in self.session.records() if r.id == agent.forked_from),
                          "a deleted agent")
            fork = f", forked from '{parent}' at message {agent.fork_index}"
        print(f"{agent.name}: {len(checkpoints)} messages{fork}")
        if not checkpoints:
            print("  none yet")
        for c in checkpoints:
            when = time.strftime("%H:%M:%S", time.localtime(c.created_at))
            print(f"  {c.index:>4}  {c.role.value:<9}  run {c.run_generation:<3}  {when}  {c.preview}")
        if len(branches) > 1:
            print(f"branches ({len(branches)}; agent.switch_branch(ID) moves to one):")
            for b in branches:
                head = "head" if b.is_head else "    "
                print(f"  {head}  {b.id[:12]}  from message {b.fork_index:<4}  {b.length:>4} messages  "
                      f"{b.preview}")

    def _do_export(self, command: args.ExportArgs) -> None:
        agent = self.session.agent(command.agent)
        suffix = {"markdown": "md", "json": "json", "ipynb": "ipynb"}[command.format]
        out = Path(command.out or f"{agent.name}.{suffix}").expanduser()
        self.session.call(lambda: agent.export(command.format, out))
        print(f"mentra: wrote {agent.snapshot.history_len} messages of '{agent.name}' to {out} "
              f"({command.format})")

    def _do_rm(self, command: args.RmArgs) -> None:
        if not any(r.name == command.agent and r.kind == "agent" for r in self.session.records()):
            # A re-run cell: what it deleted is gone already.
            print(f"mentra: no stored agent named '{command.agent}'; nothing to delete")
            return
        deleted = self.session.delete(command.agent, with_forks=command.with_forks)
        others = f" and {len(deleted) - 1} agents that belonged to it" if len(deleted) > 1 else ""
        print(f"mentra: deleted '{command.agent}'{others} from {self.session.location.path.name}")

    # --- MCP servers ----------------------------------------------------------------

    def _do_mcp_add(self, command: args.McpAddArgs) -> None:
        if command.url:
            server = runtime.MCPServer.http(command.name, command.url, headers=command.headers(),
                                            start_timeout=command.start_timeout)
        else:
            server = runtime.MCPServer.stdio(command.name, command.command_line,
                                             env=command.environment(), start_timeout=command.start_timeout)
        replaced = self.session.add_mcp_server(server)
        # A rerun of the cell (the server stored by an earlier run) reads as the first run did.
        print(f"mentra: MCP server '{server.name}' {'replaced' if replaced else 'added'} "
              f"({server.describe()}); it starts when an agent first uses it. "
              f"Give an agent its tools with %mentra spawn NAME --mcp {server.name}")

    def _do_mcp_list(self, _command: args.McpListArgs) -> None:
        servers = self.session.mcp_servers()
        print(f"MCP servers of '{self.session.location.runtime_id}':")
        if not servers:
            print("  none yet: %mentra mcp add NAME -- COMMAND [ARGS...]  or  %mentra mcp add NAME --url URL")
            return
        width = max(len(s.name) for s in servers)
        for s in servers:
            tools = f"{'?' if s.tool_count is None else s.tool_count:>3} tools"
            note = "" if s.persisted else "  (in this process only)"
            print(f"  {s.name:<{width}}  {s.transport:<5}  {s.state:<8}  {tools}  {s.target}{note}")
            if s.state == "failed" and s.error:
                print(f"  {'':<{width}}  {s.error.splitlines()[0]}")

    def _do_mcp_tools(self, command: args.McpToolsArgs) -> None:
        tools = self.session.mcp_tools(command.name)
        print(f"MCP server '{command.name}': {len(tools)} tools")
        for t in tools:
            asks = "read-only" if not t.requires_approval else "asks approval"
            first = t.description.strip().splitlines()[0] if t.description.strip() else ""
            print(f"  {t.name}  ({asks})  {first}")

    def _do_mcp_remove(self, command: args.McpRemoveArgs) -> None:
        self.session.remove_mcp_server(command.name)
        print(f"mentra: MCP server '{command.name}' removed and stopped")

    def _do_db(self, command: args.DbArgs) -> None:
        location = self.session.use_store(command.path) if command.path else self.session.location
        print(f"{'store' if location.url else 'state file'}: {location.where}\n  found: {location.source}"
              f"\n  runtime id: {location.runtime_id}")

    def _do_adopt(self, command: args.AdoptArgs) -> None:
        location = self.session.use_store(command.path, runtime_id=command.runtime_id)
        print(f"mentra: this notebook's agents are now those of runtime id '{location.runtime_id}' in "
              f"{location.where}")
        self._do_resume(args.ResumeArgs())

    def _do_models(self, command: args.ModelsArgs) -> None:
        runtime = self.session.runtime
        names = [command.provider] if command.provider else runtime.providers.known()
        for name in names:
            try:
                provider = self.session.host.call(functools.partial(runtime.providers.get, name))
                models = self.session.host.submit(provider.list_models()).result(60)
            except MentraError as err:
                if command.provider:
                    raise
                print(f"{name}: not available ({err})")
                continue
            print(f"{name}: " + (", ".join(m.key for m in models) or "(the provider lists none)"))

    def _do_alias(self, command: args.AliasArgs) -> None:
        if command.name is None:
            print(aliasing.describe_aliases(self.aliases))
            return
        if command.remove:
            if command.target is not None:
                raise UsageError(f"--remove takes no PROVIDER:MODEL\nusage: {args.AliasArgs.usage()}")
            if command.name not in self.aliases:
                print(f"mentra: no alias '{command.name}'; nothing to remove")
                return
            self.aliases = {k: v for k, v in self.aliases.items() if k != command.name}
            print(f"mentra: alias '{command.name}' removed")
            return
        if command.target is None:
            if command.name in self.aliases:
                print(f"{command.name} → {self.aliases[command.name]}")
                return
            raise UsageError(f"no alias '{command.name}'; give its model: %mentra alias {command.name} "
                             "PROVIDER:MODEL")
        try:
            aliasing.check_alias(command.name, command.target, self._providers())
        except aliasing.AliasError as err:
            raise UsageError(str(err)) from None
        self.aliases = {**self.aliases, command.name: command.target.strip()}
        print(f"mentra: '{command.name}' now stands for {command.target.strip()}")

    def _do_help(self, command: args.HelpArgs) -> None:
        try:
            print(args.help_text(command.topic))
        except args.ParseError as err:
            raise UsageError(str(err)) from None

    # --- helpers ------------------------------------------------------------------

    def _providers(self) -> set[str]:
        """Every provider name a model spec may start with here."""
        # Imported here, not lazily at module level: finding a submodule's spec
        # imports its package, and `mentra_nb.providers` loads pydantic, which
        # `%load_ext` must not pay for.
        from mentra_nb.providers import registry

        names = set(registry.BUILTIN_PROVIDERS)
        session = self._session()
        if session.is_open:  # providers registered on the runtime count too
            names |= set(session.runtime.providers.known())
        return names

    def _model(self, spec: str | None) -> str | None:
        """`spec` with an alias replaced by its `provider:model`."""
        if not spec:
            return spec
        try:
            return aliasing.resolve_model(spec, self.aliases, self._providers())
        except aliasing.AliasError as err:
            raise UsageError(str(err)) from None

    def _output_model(self, name: str | None) -> type[BaseModel] | None:
        if name is None:
            return None
        shell = self.shell
        assert shell is not None  # a magic runs in a shell
        try:
            return typed.output_model(name, shell.user_ns)
        except typed.OutputModelError as err:
            raise UsageError(str(err)) from None

    def _interpolate(self, prompt: str) -> str:
        shell = self.shell
        assert shell is not None  # a magic runs in a shell
        try:
            return context.interpolate(prompt, shell.user_ns, self.session.cells)
        except context.PromptFieldError as err:
            raise UsageError(str(err)) from None


def _rewound(name: str, before: int, to: int) -> str:
    kept = f"; the {before - to} after it stay a branch (%mentra history {name})" if before > to else ""
    return f"mentra: '{name}' goes on from its first {to} messages{kept}"
