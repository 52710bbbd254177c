"""Model aliases in an in-process IPython shell: where they apply and every refusal."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from mentra_nb.providers.test import TestProvider
from tests.notebook.conftest import mentra


def test_an_alias_names_a_teammates_model_too(ip, session):
    mentra(ip, "alias helper test:helper")
    lead = mentra(ip, "spawn lead --team")
    mentra(ip, "teammate lead ann --role researcher --model helper")
    mates = session.call(lambda: lead.teammates)
    assert [m.name for m in mates] == ["ann"]
    assert session.call(lambda: lead.teammate("ann").model.key) == "test:helper"


def test_one_alias_is_shown_and_removed_by_name(ip, capsys):
    mentra(ip, "alias quick test:quick")
    capsys.readouterr()
    mentra(ip, "alias quick")
    assert capsys.readouterr().out.strip() == "quick → test:quick"
    with pytest.raises(UsageError, match=r"no alias 'slow'; give its model: %mentra alias slow PROVIDER:MODEL"):
        mentra(ip, "alias slow")
    mentra(ip, "alias slow --remove")
    assert "no alias 'slow'; nothing to remove" in capsys.readouterr().out
    with pytest.raises(UsageError, match="--remove takes no PROVIDER:MODEL"):
        mentra(ip, "alias quick test:x --remove")


def test_a_provider_registered_after_the_alias_is_never_shadowed_silently(ip, session):
    mentra(ip, "alias mine test:mine")
    session.runtime.providers.register(TestProvider(name="mine"))
    with pytest.raises(UsageError, match="'mine' is both an alias and a provider; remove the alias"):
        mentra(ip, "spawn w --model mine")
    # And a new alias may not take a registered provider's name either.
    with pytest.raises(UsageError, match="'mine' is a provider's name"):
        mentra(ip, "alias mine test:other")


def test_alias_names_are_checked(ip):
    for bad in ("a:b", "-x", "9lives"):
        with pytest.raises(UsageError, match="is not valid: a letter, then letters"):
            mentra(ip, f"alias {bad} test:x")


def test_help_documents_the_alias_command_and_config(ip, capsys):
    mentra(ip, "help")
    out = capsys.readouterr().out
    assert "%mentra alias [NAME] [PROVIDER:MODEL] [--remove]" in out
    assert "%config MentraMagics.aliases" in out
