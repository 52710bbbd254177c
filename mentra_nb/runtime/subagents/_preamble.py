"""What a child is told about itself: the role preamble of its system prompt.

A child inherits its root's config, but not the root's identity: its system
prompt starts with who it is (its path), who started it (its parent), that its
final answer is its parent's result, and how the tree's tools reach the others.
The root's own instructions follow, for context.
"""

from __future__ import annotations

from typing import Literal

from mentra_nb.runtime._config import AgentConfig

__all__ = ["child_config", "role_preamble"]


def role_preamble(path: str, parent: str, *, can_spawn: bool,
                  approvals: Literal["ask", "deny"] = "ask") -> str:
    """The opening of the system prompt of the child at `path`, started by `parent`."""
    lines = [
        f"You are a subagent at {path} in a tree of agents, started by {parent} (your parent) "
        "to do the task in the first user message on your own.",
        f"- Your final answer (your last message without a tool call) is reported to {parent} "
        "as your result, so make it complete and self-contained: nobody else reads this "
        "conversation.",
        f'- send_message {{target: "{parent}", message}} tells your parent something before you '
        "finish (a blocker, a partial result); agents are named by path (/root is the root). "
        "Messages from other agents reach you as <subagent_message> user messages.",
    ]
    if can_spawn:
        lines.append(
            "- spawn_agent starts a subagent of your own for an independent part of the task; its "
            "result reaches you as a <subagent_update> message, and wait_agent waits for it. "
            "list_agents shows the tree."
        )
    else:
        lines.append(
            "- You are at the tree's maximum depth: you cannot start subagents; do the work "
            "yourself. wait_agent waits for mail; list_agents shows the tree."
        )
    if approvals == "deny":
        lines.append(
            "- Tools that need the user's approval are refused for you: work without them, and say "
            "in your answer what should be done."
        )
    else:
        lines.append(
            "- A tool that needs the user's approval pauses you until the user answers; your "
            "parent is told that you are waiting."
        )
    return "\n".join(lines)


def child_config(root: AgentConfig, *, path: str, parent: str, can_spawn: bool,
                 approvals: Literal["ask", "deny"] = "ask") -> AgentConfig:
    """The config of a new child: its root's, with the role preamble in front of the
    root's system prompt (the root's, never its parent's, so preambles do not pile up)."""
    system = role_preamble(path, parent, can_spawn=can_spawn, approvals=approvals)
    if root.system:
        system += f"\n\nThe root agent's own instructions, for context:\n{root.system}"
    return root.model_copy(update={"system": system})
