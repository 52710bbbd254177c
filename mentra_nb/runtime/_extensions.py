"""How capabilities plug into the runtime: `RuntimeExtension`, `AgentExtension`.

An extension is one `RuntimeExtension` subclass, registered once with
`register_extension(cls)`; every `Runtime` built without its own `extensions=`
list gets an instance of each registered class, in registration order
(`default_extensions()`). Everything the extension brings is declared on that
class, so the core names no feature. For a "reviews" extension:

- `config = ReviewConfig`, an `ExtensionFields` model whose fields `AgentConfig`
  accepts and stores as its own (`AgentConfig(reviewer="ann")`); the extension
  reads them typed with `ReviewConfig.of(agent.config)`.
- `snapshot = ReviewSnapshot`, an `ExtensionFields` model whose fields every
  `AgentSnapshot` carries (its defaults when the extension did not attach to
  that agent); the attached `AgentExtension.snapshot_fields()` fills them.
- `agent_api` / `runtime_api`: functions taking the agent (or the runtime) first,
  reachable as `agent.<name>(...)` / `rt.<name>(...)`; a `property(fn)` entry is
  read as an attribute (`agent.reviews`). The functions stay the typed way in
  (`reviews.request_review(agent, ...)`); these names are the convenient one.
- `runtime_options`: keyword arguments `Runtime(...)` accepts for it, each
  applied to the new runtime (`Runtime(review_board=[...])`).

At run time, for each agent it spawns or loads, the runtime asks every
extension to `attach` an `AgentExtension`, which can:
- offer extra tools to that agent (`tools`; `own_tool_choice` when the
  extension's config chose them, so `AgentConfig.tools` does not narrow them),
- add messages at the start of every round (`before_round`; they are
  committed with the run and rolled back with it), or halt the run there with
  a `RunHalted` error (its work is kept),
- learn how each run ended (`after_run`), e.g. to acknowledge or requeue mail,
- fill its snapshot fields (`snapshot_fields`),
- refuse calls that would wait for the user's approval (`refuse_approval`).
The runtime-wide half also reserves tool names (`refuse_tool_name`), takes mail
for an agent (`post_mail`, behind `rt.post`), hears of mail posted elsewhere
(`mail_arrived`), and after every resume path (`rt.resume_agent`, `rt.resume`,
`rt.resume_all`, and the loads extensions do themselves) gets `after_resume`
with the agents loaded, e.g. to revive the agents a lead started.

Extensions see agents as `AgentHandle`s and their runtime through `Services`
(`_services.py`); the turn loop stays ignorant of what the extensions are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from mentra_nb.errors import ConfigError
from mentra_nb.messages import Message
from mentra_nb.runtime._extension_fields import (
    ExtensionFields,
    config_fields,
    declare_config_fields,
    declare_snapshot_fields,
    forget_fields,
    snapshot_defaults,
)
from mentra_nb.runtime._services import AgentHandle, Services
from mentra_nb.runtime.tools import Tool
from mentra_nb.store.base import AgentRecord, Store

__all__ = [
    "AgentExtension",
    "ExtensionFields",
    "RuntimeExtension",
    "api_entry",
    "api_names",
    "bind_api",
    "default_extensions",
    "register_extension",
    "registered_extensions",
    "runtime_option",
    "unregister_extension",
]

class AgentExtension:
    """Per-agent behaviour. Override what you need; the defaults do nothing."""

    # True: the extension's own config chose its tools (e.g. servers named in the
    # config), so `AgentConfig.tools` does not narrow them; `hidden_tools` still does.
    own_tool_choice: ClassVar[bool] = False

    def tools(self) -> list[Tool]:
        return []

    async def before_round(self) -> list[Message]:
        return []

    async def after_run(self, succeeded: bool) -> None:
        """Awaited once per run, after it was committed (True) or rolled back (False).
        Store calls here go through `services.store_io` (off the loop for a network store)."""

    def snapshot_fields(self) -> Mapping[str, Any]:
        """Values of the fields its `RuntimeExtension.snapshot` declares (built on
        every snapshot: keep it cheap, and give already typed values)."""
        return {}

    def refuse_approval(self, tool_name: str) -> str | None:
        """A call of `tool_name` needs the user's approval: return an error text to
        refuse it at once without asking (e.g. for an agent nobody watches), or None to ask."""
        return None

    async def aclose(self) -> None:
        """The runtime is closing."""


class RuntimeExtension:
    """Runtime-wide behaviour; `attach` decides per agent. The class attributes
    declare what the extension adds to the public API (see the module's docstring)."""

    config: ClassVar[type[ExtensionFields] | None] = None
    snapshot: ClassVar[type[ExtensionFields] | None] = None
    agent_api: ClassVar[Mapping[str, Callable[..., Any] | property]] = {}
    runtime_api: ClassVar[Mapping[str, Callable[..., Any] | property]] = {}
    runtime_options: ClassVar[Mapping[str, Callable[[Any, Any], None]]] = {}

    def attach(self, agent: AgentHandle) -> AgentExtension | None:
        return None

    def tool_names(self) -> tuple[str, ...]:
        """Every tool an attached extension may offer an agent (so a tool list
        naming one is not refused as unknown before the agent exists)."""
        return ()

    def refuse_tool_name(self, name: str) -> str | None:
        """A tool named `name` is being registered on the runtime: an error text if
        the name is this extension's to give (e.g. a prefix its tools use), else None."""
        return None

    def post_mail(self, services: Services, record: AgentRecord, sender: str, content: str) -> int | None:
        """`rt.post`: leave `content` from `sender` as durable mail for the stored agent
        `record` and return the mail's id; None if this extension does not carry mail
        for that agent (the next one is asked). Raise to refuse it with a reason."""
        return None

    def after_resume(self, runtime_id: str, agents: Sequence[AgentHandle]) -> None:
        """A resume path loaded these agents (leads and those they started) of `runtime_id`."""

    def agents_left_stored(self, store: Store, runtime_id: str,
                           records: Sequence[AgentRecord]) -> set[str]:
        """Ids among the lead agents `records` of `runtime_id` that this extension loads
        itself when it needs them (e.g. the many forks one of its jobs runs): `rt.resume` leaves them
        in the store instead of loading them."""
        return set()

    def mail_arrived(self) -> None:
        """Mail may have been posted for agents of this runtime, by this process or
        another one (on the event loop)."""

    async def aclose(self) -> None:
        """The runtime is closing (after its agents' runs were cancelled)."""


# --- the registry -----------------------------------------------------------------

_REGISTERED: list[type[RuntimeExtension]] = []
_AGENT_API: dict[str, Callable[..., Any] | property] = {}
_RUNTIME_API: dict[str, Callable[..., Any] | property] = {}
_RUNTIME_OPTIONS: dict[str, Callable[[Any, Any], None]] = {}


def register_extension(cls: type[RuntimeExtension]) -> None:
    """Make `cls` part of every runtime built without its own `extensions=` list, and
    its declared config fields, snapshot fields, agent and runtime API part of the
    public API. Registering the same class again does nothing. A name the core
    already has (a field of `AgentConfig`, a method of `Agent`) stays the core's."""
    if not (isinstance(cls, type) and issubclass(cls, RuntimeExtension)):
        raise ConfigError(f"{cls!r} is not a RuntimeExtension subclass; register the class itself")
    if cls in _REGISTERED:
        return
    declared = {
        "config field": (cls.config.model_fields if cls.config else {}, config_fields()),
        "snapshot field": (cls.snapshot.model_fields if cls.snapshot else {}, snapshot_defaults()),
        "agent attribute": (cls.agent_api, _AGENT_API),
        "runtime attribute": (cls.runtime_api, _RUNTIME_API),
        "runtime option": (cls.runtime_options, _RUNTIME_OPTIONS),
    }
    for what, (names, taken) in declared.items():
        clash = sorted(n for n in names if n in taken)
        if clash:
            raise ConfigError(f"{cls.__name__} declares the {what} {', '.join(clash)}, which another "
                              "extension or the core already has; rename it")
    _REGISTERED.append(cls)
    if cls.config is not None:
        declare_config_fields(cls.config)
    if cls.snapshot is not None:
        declare_snapshot_fields(cls.snapshot)
    _AGENT_API.update(cls.agent_api)
    _RUNTIME_API.update(cls.runtime_api)
    _RUNTIME_OPTIONS.update(cls.runtime_options)


def unregister_extension(cls: type[RuntimeExtension]) -> None:
    """Undo `register_extension(cls)` (for tests, or code that registers its
    extension again after changing it); runtimes already built keep theirs."""
    if cls not in _REGISTERED:
        return
    _REGISTERED.remove(cls)
    for fields in (cls.config, cls.snapshot):
        if fields is not None:
            forget_fields(fields)
    for names, taken in ((cls.agent_api, _AGENT_API), (cls.runtime_api, _RUNTIME_API),
                         (cls.runtime_options, _RUNTIME_OPTIONS)):
        for name in names:
            taken.pop(name, None)


def registered_extensions() -> tuple[type[RuntimeExtension], ...]:
    """The extension classes `register_extension` added, in the order they act on each round."""
    return tuple(_REGISTERED)


def default_extensions() -> list[RuntimeExtension]:
    """A new instance of every registered extension, in registration order: what a
    `Runtime` gets unless it is given a list. To add one of yours to a single
    runtime, pass `extensions=[*default_extensions(), Mine()]`."""
    return [cls() for cls in _REGISTERED]


def api_names(owner: str) -> list[str]:
    """The names extensions registered on agents (`owner="agent"`) or runtimes."""
    return list(_AGENT_API if owner == "agent" else _RUNTIME_API)


def api_entry(owner: str, name: str) -> Callable[..., Any] | property | None:
    """What an extension registered as `name` on agents (`owner="agent"`) or runtimes."""
    return (_AGENT_API if owner == "agent" else _RUNTIME_API).get(name)


def bind_api(owner: str, target: object, name: str) -> Any:
    """`target.<name>` for a name an extension registered (see `api_entry`)."""
    entry = api_entry(owner, name)
    if entry is None:
        kind = type(target).__name__
        raise AttributeError(f"'{kind}' object has no attribute '{name}'", name=name, obj=target)
    if isinstance(entry, property):
        assert entry.fget is not None
        return entry.fget(target)

    def bound(*args: Any, **kwargs: Any) -> Any:
        return entry(target, *args, **kwargs)

    bound.__name__ = name
    bound.__doc__ = entry.__doc__
    return bound


def runtime_option(name: str) -> Callable[[Any, Any], None]:
    """The function applying `Runtime(<name>=...)`; a clear error for an unknown name."""
    apply = _RUNTIME_OPTIONS.get(name)
    if apply is None:
        known = ", ".join(sorted(_RUNTIME_OPTIONS)) or "none"
        raise ConfigError(f"Runtime() got an unknown option '{name}'; the registered extensions "
                          f"add these: {known}")
    return apply
