"""A server extension for tests/notebook/test_server_nodelay.py only: it answers
`GET /mentra-test/nodelay` with the TCP_NODELAY flag of every open kernel
websocket, read from the server's own sockets."""

from __future__ import annotations

import json
import socket
from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "tests.notebook.nodelay_probe"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
    from jupyter_server.utils import url_path_join
    from tornado import web

    class NodelayProbe(JupyterHandler):  # type: ignore[misc]
        @web.authenticated  # type: ignore[untyped-decorator]
        def get(self) -> None:
            flags = [c.websocket_handler.ws_connection.stream.socket.getsockopt(
                         socket.IPPROTO_TCP, socket.TCP_NODELAY)
                     for c in list(ZMQChannelsWebsocketConnection._open_sockets)]
            self.finish(json.dumps(flags))

    route = url_path_join(serverapp.web_app.settings["base_url"], "/mentra-test/nodelay")
    serverapp.web_app.add_handlers(".*$", [(route, NodelayProbe)])
