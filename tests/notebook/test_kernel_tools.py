"""Kernel inspection (list_variables, describe_variable) and the opt-in python tool."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pandas as pd
import pytest

from mentra_nb.notebook._kernel_tools import MAX_VARIABLES, kernel_tools, python_tool
from tests.tools.helpers import by_name, call


class Loud:
    """A user object whose repr is huge."""

    def __repr__(self) -> str:
        return "L" * 100_000


class Touchy:
    """A user object whose attributes must never be read by list_variables."""

    touched = False

    @property
    def shape(self):
        Touchy.touched = True
        return (1, 1)

    def __len__(self):
        Touchy.touched = True
        return 1


@pytest.fixture
def ns():
    return {
        "df": pd.DataFrame({"region": ["north", "south", "east"], "amount": [10, 20, 30]}),
        "arr": np.arange(12).reshape(3, 4),
        "rows": [1, 2, 3],
        "name": "sales",
        "loud": Loud(),
        "touchy": Touchy(),
        "_hidden": 1,
        "np": np,
        "In": [],
        "get_ipython": lambda: None,
    }


@pytest.fixture
def tools(ns):
    return by_name(kernel_tools(ns))


async def test_list_variables_shows_types_and_shapes_and_hides_modules_and_private_names(tools):
    out = await call(tools["list_variables"])
    assert out.content.splitlines() == [
        "arr: numpy.ndarray (shape (3, 4))",
        "df: pandas.DataFrame (shape (3, 2))",
        "loud: tests.notebook.test_kernel_tools.Loud",
        "name: str (len 5)",
        "rows: list (len 3)",
        "touchy: tests.notebook.test_kernel_tools.Touchy",
    ]
    assert not Touchy.touched  # no user property or __len__ was run


async def test_list_variables_is_bounded(ns, tools):
    ns.update({f"v{i:04}": i for i in range(MAX_VARIABLES + 5)})
    lines = (await call(tools["list_variables"])).content.splitlines()
    assert len(lines) == MAX_VARIABLES + 1
    assert lines[-1].startswith("[11 more not shown")


async def test_describe_a_dataframe_gives_dtypes_head_and_describe(tools):
    out = await call(tools["describe_variable"], name="df")
    text = out.content
    assert text.startswith("df: pandas DataFrame, shape (3, 2)")
    dtypes = text.split("dtypes:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in dtypes] == ["region", "amount"] and dtypes[1].endswith("int64")
    assert "head(5):" in text and "north" in text
    assert "describe():" in text and "mean" in text and "20.0" in text


async def test_describe_an_array_gives_shape_and_dtype(tools):
    out = await call(tools["describe_variable"], name="arr")
    assert out.content.splitlines()[0] == "arr: numpy ndarray, shape (3, 4), dtype int64"
    assert "[ 8  9 10 11]]" in out.content


async def test_describe_anything_else_is_a_bounded_repr(tools):
    assert (await call(tools["describe_variable"], name="rows")).content == "rows: list, len 3\n[1, 2, 3]"
    loud = (await call(tools["describe_variable"], name="loud")).content
    assert len(loud) < 4_200 and loud.endswith("[96000 more characters]")


async def test_describe_an_unknown_or_hidden_name_suggests_close_ones(tools):
    out = await call(tools["describe_variable"], name="dff")
    assert out.is_error and out.content == "there is no variable 'dff' in the kernel; did you mean df?"
    hidden = await call(tools["describe_variable"], name="_hidden")
    assert hidden.is_error and "list_variables shows the names" in hidden.content


def test_inspection_tools_are_read_only_and_python_needs_approval(ns, tools):
    assert all(t.spec.read_only and not t.spec.requires_approval for t in tools.values())
    spec = python_tool(ns).spec
    assert spec.requires_approval and not spec.read_only


async def test_python_runs_in_the_namespace_and_returns_output_and_the_last_value(ns):
    python = python_tool(ns)
    out = await call(python, code="total = df['amount'].sum()\nprint('rows:', len(df))\nint(total * 2)")
    assert not out.is_error
    assert out.content == "output:\nrows: 3\nresult: 120"
    assert ns["total"] == 60  # the kernel sees what the agent defined


async def test_python_errors_come_back_with_the_models_frames_only(ns):
    python = python_tool(ns)
    out = await call(python, code="print('before')\n1 / 0")
    assert out.is_error
    assert out.content.startswith("output:\nbefore\nerror:\n")
    assert "ZeroDivisionError: division by zero" in out.content
    assert "kernel_tools.py" not in out.content
    syntax = await call(python, code="def (")
    assert syntax.is_error and syntax.content.startswith("SyntaxError:")
    exits = await call(python, code="raise SystemExit(3)")
    assert exits.is_error and "SystemExit: 3" in exits.content  # the kernel survives


async def test_python_output_is_captured_per_thread_and_bounded(ns):
    python = python_tool(ns)
    outside: list[str] = []
    real = sys.stdout

    class Sink:
        def write(self, text):
            outside.append(text)
            return len(text)

        def flush(self):
            pass

    sys.stdout = Sink()
    sink = sys.stdout
    try:
        ready = threading.Event()
        ns["ready"] = ready

        def cell_printing():
            ready.wait(5)
            print("from a cell")

        cell = threading.Thread(target=cell_printing)
        cell.start()
        out = await call(python, code="ready.set()\nimport time; time.sleep(0.2)\nprint('x' * 100_000)")
        cell.join()
        assert sys.stdout is sink  # restored to what the kernel had
    finally:
        sys.stdout = real
    assert "from a cell\n" in "".join(outside)  # a cell's print still reaches its own output
    assert "from a cell" not in out.content
    assert len(out.content) < 21_000 and "bytes of output left out" in out.content
    assert sys.stdout is real  # the router is gone once no python call runs
