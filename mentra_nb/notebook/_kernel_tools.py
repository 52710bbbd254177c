"""Tools that look into the kernel: `list_variables`, `describe_variable`,
`notebook_cells`, `view_figure`, and the opt-in `python`.

The inspection tools read the kernel's namespace from the runtime's side
(a worker thread of its loop) while cells may be running. They never call
user code except `repr()` of the value asked for and pandas/numpy's own
summaries, and every output is bounded. Shapes are read only from pandas and
numpy objects and lengths only from built-in containers, whose `shape`/`len`
cannot run user code.

`python` runs code in the kernel's namespace, so it can do anything a cell
can; it always requires the user's approval.
"""

from __future__ import annotations

import ast
import difflib
import io
import reprlib
import sys
import threading
import traceback
import types
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from mentra_nb.notebook._cell_history import CellHistory, CellLookupError
from mentra_nb.notebook._figures import FigureNotFound, find_figures
from mentra_nb.runtime import (
    BoundedOutput,
    Tool,
    ToolDurability,
    ToolOutput,
    ToolSideEffectLevel,
    tool,
)

__all__ = ["KERNEL_TOOL_NAMES", "kernel_tools", "python_tool"]

KERNEL_TOOL_NAMES = ("list_variables", "describe_variable", "notebook_cells", "view_figure")
MAX_VARIABLES = 200
MAX_REPR_CHARS = 4_000
MAX_DESCRIBE_CHARS = 12_000
MAX_PYTHON_OUTPUT_CHARS = 20_000
# What IPython puts in every namespace; never the user's data.
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})
_SIZED_BUILTINS = (list, tuple, dict, set, frozenset, str, bytes, bytearray)
_PYTHON_FILENAME = "<mentra python>"


def _snapshot(user_ns: MutableMapping[str, Any]) -> dict[str, Any]:
    # A cell may add a variable while we copy; a second try sees a settled dict.
    for _ in range(3):
        try:
            return dict(user_ns)
        except RuntimeError:
            continue
    return {}


def _visible(name: str, value: Any) -> bool:
    return not name.startswith("_") and name not in _IPYTHON_NAMES and not isinstance(value, types.ModuleType)


def _library_type(value: Any, module: str, *names: str) -> bool:
    """isinstance against pandas/numpy classes without importing them (if the
    kernel never imported pandas, no value can be a DataFrame)."""
    lib = sys.modules.get(module)
    return lib is not None and isinstance(value, tuple(getattr(lib, n) for n in names if hasattr(lib, n)))


def _type_name(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    if module == "builtins":
        return kind.__name__
    # pandas.core.frame.DataFrame reads better (and stays stable across versions) as pandas.DataFrame.
    top = module.split(".", 1)[0]
    return f"{top}.{kind.__qualname__}" if top in ("pandas", "numpy") else f"{module}.{kind.__qualname__}"


def _size(value: Any) -> str:
    if _library_type(value, "pandas", "DataFrame", "Series", "Index") or _library_type(value, "numpy", "ndarray"):
        return f"shape {tuple(value.shape)}"
    if type(value) in _SIZED_BUILTINS:
        return f"len {len(value)}"
    return ""


def _bounded_repr(value: Any, limit: int = MAX_REPR_CHARS) -> str:
    if type(value) in (*_SIZED_BUILTINS, int, float, complex, bool, type(None)):
        short = reprlib.Repr()
        short.maxlist = short.maxtuple = short.maxset = short.maxfrozenset = short.maxdict = 30
        short.maxstring = short.maxother = limit // 4
        short.maxlevel = 4
        text = short.repr(value)
    else:
        try:
            text = repr(value)
        except Exception as err:  # a user's __repr__ may raise
            return f"<repr failed: {type(err).__name__}: {err}>"
    if len(text) > limit:
        return f"{text[:limit]}… [{len(text) - limit} more characters]"
    return text


def _clip(text: str, limit: int = MAX_DESCRIBE_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n… [cut at {limit} characters]"


def _describe(name: str, value: Any) -> str:
    kind = _type_name(value)
    if _library_type(value, "pandas", "DataFrame"):
        columns = value.shape[1]
        dtypes = value.dtypes.head(50).to_string()
        more = f"\n… and {columns - 50} more columns" if columns > 50 else ""
        parts = [f"{name}: pandas DataFrame, shape {tuple(value.shape)}",
                 f"dtypes:\n{dtypes}{more}",
                 f"head(5):\n{value.head(5).to_string(max_cols=20, max_colwidth=40)}"]
        try:
            parts.append(f"describe():\n{value.describe().to_string(max_cols=20)}")
        except Exception as err:  # e.g. no numeric columns in old pandas
            parts.append(f"describe() failed: {err}")
        return _clip("\n\n".join(parts))
    if _library_type(value, "pandas", "Series"):
        parts = [f"{name}: pandas Series {value.name!r}, length {len(value)}, dtype {value.dtype}",
                 f"head(5):\n{value.head(5).to_string()}"]
        try:
            parts.append(f"describe():\n{value.describe().to_string()}")
        except Exception as err:
            parts.append(f"describe() failed: {err}")
        return _clip("\n\n".join(parts))
    if _library_type(value, "numpy", "ndarray"):
        numpy = sys.modules["numpy"]
        body = numpy.array2string(value, threshold=200, edgeitems=3, max_line_width=120)
        return _clip(f"{name}: numpy ndarray, shape {tuple(value.shape)}, dtype {value.dtype}\n{body}")
    size = _size(value)
    header = f"{name}: {kind}" + (f", {size}" if size else "")
    return f"{header}\n{_bounded_repr(value)}"


def kernel_tools(user_ns: MutableMapping[str, Any], cells: CellHistory | None = None,
                 notebook: Callable[[], Path | None] = lambda: None) -> list[Tool]:
    """`list_variables` and `describe_variable` over `user_ns` (the kernel's
    namespace), and `notebook_cells` and `view_figure` over `cells` (the kernel's
    cell history) and the notebook file `notebook()` names, when known."""

    @tool(read_only=True)
    def list_variables() -> str:
        """List the notebook kernel's variables: name, type, and shape or length."""
        variables = [(n, v) for n, v in _snapshot(user_ns).items() if _visible(n, v)]
        if not variables:
            return "the kernel has no variables yet"
        lines = []
        for name, value in sorted(variables, key=lambda item: item[0])[:MAX_VARIABLES]:
            size = _size(value)
            lines.append(f"{name}: {_type_name(value)}" + (f" ({size})" if size else ""))
        if len(variables) > MAX_VARIABLES:
            lines.append(f"[{len(variables) - MAX_VARIABLES} more not shown; describe_variable takes any name]")
        return "\n".join(lines)

    @tool(read_only=True)
    def describe_variable(
        name: Annotated[str, Field(description="A variable name from list_variables")],
    ) -> str | ToolOutput:
        """Describe one kernel variable: a DataFrame's dtypes, head and describe(); an array's
        shape and dtype; a bounded repr of anything else."""
        namespace = _snapshot(user_ns)
        if name not in namespace or not _visible(name, namespace[name]):
            close = difflib.get_close_matches(name, [n for n, v in namespace.items() if _visible(n, v)], n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else "; list_variables shows the names"
            return ToolOutput(content=f"there is no variable '{name}' in the kernel{hint}", is_error=True)
        try:
            return _describe(name, namespace[name])
        except Exception as err:
            return ToolOutput(content=f"could not describe '{name}': {type(err).__name__}: {err}", is_error=True)

    @tool(read_only=True)
    def notebook_cells(
        start: Annotated[int | None, Field(ge=1, description="First execution count (default: 20 before end)")] = None,
        end: Annotated[int | None, Field(ge=1, description="Last execution count (default: the last cell run)")] = None,
        with_outputs: Annotated[bool, Field(description="Include each cell's value, error and images")] = True,
    ) -> str | ToolOutput:
        """Read the notebook's cells as the kernel ran them: In [n] sources, with their outputs
        (Out[n] as text), errors (tracebacks) and displayed images, and the notebook file's
        markdown cells when the file is known. At most 50 cells per call."""
        if cells is None:
            return ToolOutput(content="this kernel has no cell history (IPython is not running it)", is_error=True)
        try:
            return cells.listing(start, end, with_outputs=with_outputs, notebook=notebook())
        except CellLookupError as err:
            return ToolOutput(content=str(err), is_error=True)

    @tool(read_only=True)
    def view_figure(
        figure: Annotated[str | None, Field(description=(
            "Empty: the open matplotlib figures, else the latest displayed image. A number: matplotlib "
            "figure n. 'cell 12': the images cell In[12] displayed. A name: a figure label or a variable "
            "holding a matplotlib Figure/Axes or a PIL image"))] = None,
    ) -> ToolOutput:
        """See a figure of the notebook: renders a matplotlib figure, a PIL image or a cell's displayed
        plot as a PNG image you can look at."""
        try:
            shown = find_figures(figure, cells, _snapshot(user_ns))
        except FigureNotFound as err:
            return ToolOutput(content=str(err), is_error=True)
        return ToolOutput(content=shown.description, images=shown.images)

    return [list_variables, describe_variable, notebook_cells, view_figure]


class _ThreadRouter(io.TextIOBase):
    """Stands in for sys.stdout/stderr: writes from a thread running `python`
    go to that call's buffer, everything else to the real stream, so a cell
    printing at the same time keeps its output."""

    def __init__(self, original: Any) -> None:
        self.original = original
        self.buffers: dict[int, BoundedOutput] = {}

    def write(self, text: str) -> int:
        buffer = self.buffers.get(threading.get_ident())
        if buffer is None:
            written: int = self.original.write(text)
            return written
        buffer.feed(text.encode("utf-8", errors="replace"))
        return len(text)

    def flush(self) -> None:
        if threading.get_ident() not in self.buffers:
            self.original.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.original, name)


_router_lock = threading.Lock()


def _capture(buffer: BoundedOutput) -> None:
    with _router_lock:
        for stream in ("stdout", "stderr"):
            current = getattr(sys, stream)
            if not isinstance(current, _ThreadRouter):
                current = _ThreadRouter(current)
                setattr(sys, stream, current)
            current.buffers[threading.get_ident()] = buffer


def _release() -> None:
    with _router_lock:
        for stream in ("stdout", "stderr"):
            current = getattr(sys, stream)
            if isinstance(current, _ThreadRouter):
                current.buffers.pop(threading.get_ident(), None)
                if not current.buffers:
                    setattr(sys, stream, current.original)


def python_tool(user_ns: MutableMapping[str, Any], *, timeout: float = 120.0) -> Tool:
    """The `python` tool: run code in `user_ns` (the kernel's namespace). Always
    requires approval; opt-in (`%mentra spawn NAME --python`)."""

    @tool(requires_approval=True, side_effect_level=ToolSideEffectLevel.LOCAL,
          durability=ToolDurability.NOT_REPLAYABLE, timeout=timeout)
    def python(
        code: Annotated[str, Field(min_length=1, description="Python code; the last expression's value is shown")],
    ) -> ToolOutput:
        """Run Python code in the notebook kernel's namespace (its variables are shared with the
        user's cells); returns printed output and the last expression's repr."""
        try:
            tree = ast.parse(code, filename=_PYTHON_FILENAME, mode="exec")
        except SyntaxError as err:
            return ToolOutput(content=f"SyntaxError: {err.msg} (line {err.lineno}); fix the code and call again",
                              is_error=True)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body[-1].value)
            tree.body.pop()
        output = BoundedOutput(MAX_PYTHON_OUTPUT_CHARS)
        namespace = user_ns if isinstance(user_ns, dict) else dict(user_ns)
        _capture(output)
        value: Any = None
        failure = ""
        try:
            exec(compile(tree, _PYTHON_FILENAME, "exec"), namespace)
            if last is not None:
                value = eval(compile(last, _PYTHON_FILENAME, "eval"), namespace)
        except BaseException as err:  # SystemExit, KeyboardInterrupt too: the kernel must survive
            # Only the frames of the model's code, not this tool's.
            frames = traceback.extract_tb(err.__traceback__)
            own = [f for f in frames if f.filename != __file__]
            failure = "".join(traceback.format_list(own[-10:]) + traceback.format_exception_only(err))
        finally:
            _release()
        printed = output.text()
        parts = []
        if printed:
            parts.append(f"output:\n{printed.rstrip()}")
        if failure:
            parts.append(f"error:\n{failure.rstrip()}")
            return ToolOutput(content="\n".join(parts), is_error=True)
        if value is not None:
            parts.append(f"result: {_bounded_repr(value)}")
        return ToolOutput(content="\n".join(parts) or "(ran; no output and no value)")

    return python
