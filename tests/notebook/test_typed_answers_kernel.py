"""`%%mentra NAME --output MODEL` and `%mentra alias` in a real ipykernel (jupyter_client)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.process

INVOICE = (
    "from pydantic import BaseModel\n"
    "class Invoice(BaseModel):\n"
    "    vendor: str\n"
    "    total: float\n"
    "    paid: bool = False\n"
)


def test_output_cell_returns_the_validated_instance_of_a_kernel_class(kernels):
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    kernel.run(INVOICE)
    kernel.run("%mentra spawn clerk")
    messages: list[dict] = []
    kernel.client.execute_interactive("%%mentra clerk --wait --output Invoice\nRead the invoice.",
                                      timeout=60, output_hook=messages.append)
    [result] = [m for m in messages if m["msg_type"] == "execute_result"]
    assert result["content"]["data"]["text/plain"] == "Invoice(vendor='a', total=0.0, paid=False)"
    assert kernel.run("print(type(_).__name__, isinstance(_, Invoice))").strip() == "Invoice True"
    # Without --wait the cell returns the Turn at once; its .output waits for the instance.
    shown = kernel.run("%%mentra clerk --output Invoice\nAgain.").strip().splitlines()
    assert shown == ["AgentView(clerk, turn 2)", "Turn(clerk, run 2, output Invoice)"]
    assert kernel.run("print(repr(_.output))").strip() == "Invoice(vendor='a', total=0.0, paid=False)"
    # The line form takes it too.
    out = kernel.run("invoice = %mentra send clerk --wait --output Invoice Once more.\nprint(invoice.total)")
    assert out.strip().endswith("0.0")


def test_output_names_that_are_missing_or_not_models_are_usage_errors(kernels):
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    kernel.run(INVOICE + "rows = 3")
    kernel.run("%mentra spawn clerk")
    text, _errors, status = kernel.execute("%%mentra clerk --output Invoise\nRead it.")
    assert status == "error"
    assert text.startswith("UsageError: --output Invoise: there is no 'Invoise' in the kernel "
                           "(did you mean 'Invoice'?)")
    text, _errors, status = kernel.execute("%%mentra clerk --output rows\nRead it.")
    assert status == "error"
    assert "UsageError: --output rows: 'rows' is an object of type int, not a pydantic model class" in text
    # Nothing was sent.
    assert kernel.run("import mentra_nb.notebook as nb\n"
                      "print(nb.session().agent('clerk').snapshot.history_len)").strip() == "0"


def test_aliases_from_the_magic_and_from_config_name_models_for_spawn(kernels):
    kernel = kernels()
    kernel.run("%load_ext mentra_nb")
    assert "no model aliases yet" in kernel.run("%mentra alias")
    kernel.run("%config MentraMagics.aliases = {'careful': 'test:careful'}")
    assert "'quick' now stands for test:quick" in kernel.run("%mentra alias quick test:quick")
    listing = kernel.run("%mentra alias")
    assert "quick    test:quick" in listing and "careful  test:careful" in listing
    assert "test:quick" in kernel.run("a = %mentra spawn fast_one --model quick\nprint(a.model.key)")
    kernel.run("%config MentraMagics.default_model = 'careful'")
    assert "test:careful" in kernel.run("b = %mentra spawn other\nprint(b.model.key)")
    # The state file records the real model, so a resumed agent needs no alias.
    assert "test:quick" in kernel.run("%mentra list")

    for line, message in [
        ("%mentra alias openai test:x", "'openai' is a provider's name, so an alias 'openai' would hide it"),
        ("%mentra alias fast antropic:x", "unknown provider 'antropic'; did you mean 'anthropic'?"),
        ("%mentra alias fast test", "names no model; write test:MODEL"),
        ("%mentra spawn w --model quik", "model 'quik' is neither an alias nor a provider; did you mean 'quick'?"),
    ]:
        text, _errors, status = kernel.execute(line)
        # IPython prints a UsageError (no traceback) and fails the cell.
        assert status == "error" and text.startswith("UsageError: ") and message in text, (line, text)
    # %config reports the error itself (and the cell goes on); the aliases stay as they were.
    text, _errors, _status = kernel.execute("%config MentraMagics.aliases = {'gemini': 'test:x'}")
    assert "MentraMagics.aliases: 'gemini' is a provider's name" in text
    assert "quick    test:quick" in kernel.run("%mentra alias")
    assert "alias 'quick' removed" in kernel.run("%mentra alias quick --remove")
    assert "quick" not in kernel.run("%mentra alias")
