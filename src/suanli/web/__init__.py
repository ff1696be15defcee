"""suanli.web: the live service's FastAPI app, its config, its receivers and its guard.

:func:`create_app` builds the app from its dependencies; :func:`load_serve_config` reads
``serve.yaml`` (docs/serve.md); :class:`Auth` holds the token.
"""

from suanli.web.alerts import AlertNotification
from suanli.web.app import Consumers, Receivers, create_app
from suanli.web.auth import Auth
from suanli.web.config import bind_warning, load_serve_config, merge_listen, parse_listen, parse_serve_config
from suanli.web.kineto import KinetoUpload
from suanli.web.queue import Admission, IngestQueue
from suanli.web.settings import ServeConfig

__all__ = ["Admission", "AlertNotification", "Auth", "Consumers", "IngestQueue", "KinetoUpload", "Receivers",
           "ServeConfig", "bind_warning", "create_app", "load_serve_config", "merge_listen", "parse_listen",
           "parse_serve_config"]
