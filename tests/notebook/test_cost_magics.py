"""Cost in the notebook: %mentra cost and list, %config MentraMagics.prices, and the
AgentView header, in a real IPython shell with the offline test model priced."""

from __future__ import annotations

import time

import pytest
from IPython.core.error import UsageError

from mentra_nb import BudgetExceeded, pricing
from mentra_nb.notebook.agent_view import AgentView
from mentra_nb.testing import ScriptedProvider, text_stream
from tests.conftest import until
from tests.notebook.conftest import mentra

# The offline model is free; these tests give it a price so there are dollars to show.
PRICES = "{'test:*': {'input': 1000, 'output': 2000}}"


@pytest.fixture
def priced(ip):
    ip.run_line_magic("config", f"MentraMagics.prices = {PRICES}")
    yield
    ip.run_line_magic("config", "MentraMagics.prices = {}")


def test_config_prices_register_and_dropping_them_restores_the_built_in_price(ip) -> None:
    ip.run_line_magic("config", f"MentraMagics.prices = {PRICES}")
    assert pricing.price("test:default").input == 1000
    ip.run_line_magic("config", "MentraMagics.prices = {}")
    assert pricing.price("test:default").input == 0


def test_a_bad_configured_price_is_refused_with_a_clear_message(ip, caplog) -> None:
    # %config reports a trait's error in the log rather than raising it.
    ip.run_line_magic("config", "MentraMagics.prices = {'test:*': {'input': -1, 'output': 1}}")
    assert "MentraMagics.prices: invalid price for 'test:*'" in caplog.text
    assert pricing.price("test:default").input == 0
    ip.run_line_magic("config", "MentraMagics.prices = {}")


def test_cost_and_list_show_dollars_at_the_configured_prices(ip, capsys, priced) -> None:
    agent = mentra(ip, "spawn writer")
    mentra(ip, "send writer --wait hello")
    usage = agent.usage
    expected = (usage.input_tokens * 1000 + usage.output_tokens * 2000) / 1e6
    assert usage.cost_usd == pytest.approx(expected) and expected > 0
    capsys.readouterr()
    mentra(ip, "cost writer")
    out = capsys.readouterr().out
    assert out.startswith(f"writer (test:default): {pricing.format_cost(expected)}, ")
    assert f"{usage.total_tokens:,} tokens" in out
    mentra(ip, "list")
    assert pricing.format_cost(expected) in capsys.readouterr().out


def test_cost_of_a_model_without_a_price_says_unknown_and_how_to_price_it(ip, session, capsys) -> None:
    provider = ScriptedProvider("scripted", [text_stream("hi")])
    session.call(lambda: session.runtime.providers.register(provider))
    mentra(ip, "spawn writer")
    mentra(ip, "send writer --wait hello")
    mentra(ip, "spawn odd --model scripted:unpriced")
    mentra(ip, "send odd --wait hello")
    capsys.readouterr()
    mentra(ip, "cost")
    out = capsys.readouterr().out
    assert "writer (test:default): $0, " in out
    assert "odd (scripted:unpriced): cost unknown, " in out
    assert "all agents: cost unknown" in out
    assert "mentra_nb.pricing.register(...) or %config MentraMagics.prices adds one" in out
    with pytest.raises(UsageError, match="no stored agent named 'nobody'"):
        mentra(ip, "cost nobody")


def test_a_lead_costs_its_own_calls_plus_its_team(ip, session, capsys, priced) -> None:
    lead = mentra(ip, "spawn lead --team")
    mentra(ip, "send lead --wait plan the work")
    mentra(ip, "teammate lead alice --role researcher --prompt 'Find sources'")
    alice = session.call(lambda: lead.teammate("alice"))
    # Alice answers by mail, which wakes the lead for another run: wait until the
    # team is quiet (nobody running, twice in a row).
    until(lambda: alice.usage.output_tokens > 0 and not alice.is_running)
    quiet = [False]

    def settled() -> bool:
        now = not alice.is_running and not lead.is_running and not session.call(
            lambda: lead.snapshot.pending_team_messages)
        was, quiet[0] = quiet[0], now
        time.sleep(0.05)
        return was and now

    until(settled)
    capsys.readouterr()
    mentra(ip, "cost lead")
    out = capsys.readouterr().out
    # The offline model may use the team tools too (it can spawn teammates of its
    # own): the team is every teammate record under the lead, alice among them.
    team = [r for r in session.records() if r.kind == "teammate" and r.parent_id == lead.id]
    assert alice.id in {r.id for r in team}
    team_cost = sum(r.usage.cost_usd for r in team)
    total = lead.usage.cost_usd + team_cost
    assert out.splitlines()[0].startswith(f"lead (test:default): {pricing.format_cost(total)}, ")
    assert f"own calls  {pricing.format_cost(lead.usage.cost_usd):>14}" in out
    assert f"team       {pricing.format_cost(team_cost):>14}" in out

    view = session.view(lead)
    assert isinstance(view, AgentView)
    session.call(lambda: view._sync_state())
    assert view.cost == (f"{pricing.format_cost(lead.usage.cost_usd)} · "
                         f"{pricing.format_cost(total)} with team")


def test_the_view_header_of_a_lone_agent_shows_its_cost(ip, session, priced) -> None:
    agent = mentra(ip, "spawn writer")
    mentra(ip, "send writer --wait hello")
    view = session.view(agent)
    until(lambda: view.cost == pricing.format_cost(agent.usage.cost_usd))
    assert view.cost.startswith("$")


@pytest.mark.parametrize(("option", "allowed"), [("--max-cost -1", "max_cost_usd=-1.0: .*a number above 0"),
                                                 ("--max-cost nan", "max_cost_usd=nan: .*a number above 0"),
                                                 ("--max-tokens 0", "max_tokens_total=0: .*a whole number above 0")])
def test_spawn_with_a_bad_budget_is_a_usage_error_saying_what_is_allowed(ip, session, option, allowed) -> None:
    with pytest.raises(UsageError, match=rf"(?s)invalid AgentConfig: {allowed}.*usage: %mentra spawn"):
        mentra(ip, f"spawn writer {option}")
    assert session.records() == []  # nothing was stored


def test_spawn_sets_the_budgets(ip) -> None:
    agent = mentra(ip, "spawn writer --max-cost 0.5 --max-tokens 100000")
    assert (agent.config.max_cost_usd, agent.config.max_tokens_total) == (0.5, 100_000)


def test_cost_of_an_agent_whose_server_misreported_usage_says_so(ip, session, capsys) -> None:
    from mentra_nb import Usage

    # What a provider parse hands over for `completion_tokens: -5000000`: clamped and flagged.
    provider = ScriptedProvider("scripted", [text_stream("hi", usage=Usage(output_tokens=-5_000_000))])
    session.call(lambda: session.runtime.providers.register(provider))
    agent = mentra(ip, "spawn odd --model scripted:m --max-tokens 100000")
    mentra(ip, "send odd --wait hello")
    assert (agent.usage.output_tokens, agent.usage.misreported_calls, agent.usage.cost_usd) == (0, 1, None)
    capsys.readouterr()
    mentra(ip, "cost odd")
    out = capsys.readouterr().out
    assert "odd (scripted:m): cost unknown, " in out
    assert "the server reported impossible usage for 1 model call(s)" in out
    with pytest.raises(BudgetExceeded, match="1 of its model calls had an impossible usage report"):
        mentra(ip, "send odd --wait again")
